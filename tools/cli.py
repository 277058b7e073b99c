"""What every command-line tool shares: exit codes, the two error kinds, the entry
wrapper that maps them to one diagnostic line and an exit code (never a traceback
unless `NPU_DEBUG=1`; Ctrl-C is `error: interrupted`, exit 130), and `write_output`,
the atomic write of every output file. Standard library only, so a tool's fast path
(npu-compile's cache hit) starts without the compiler or numpy."""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from npu_dialects.files import Writer, cannot_write, write_atomic
from npu_dialects.plugins import PluginError

EXIT_OK, EXIT_USER, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
EXIT_INTERNAL = EXIT_USER  # the contract has no separate code for our own bugs


class UsageError(Exception):
    """Bad command-line usage (exit 2); `details` (a `hint:` line...) printed after."""

    def __init__(self, message: str, details: str | None = None):
        super().__init__(message)
        self.details = details


class UserError(Exception):
    """A diagnosed user error (exit 1): `lines` first, then `details`."""

    def __init__(self, lines: str | list[str], details: str | None = None):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        self.details = details
        super().__init__("\n".join(self.lines))


_LOCATED = re.compile(r"[^\n]*?: (error|warning|note): ")
"""A diagnostic that already names its place: `FILE:LINE:COL: error: ...`, `MODEL.onnx: error: ...`."""


def error_line(msg: str) -> str:
    """`msg` as a diagnostic line: `error: ` in front unless it already has it, names
    its place (`FILE:LINE:COL: error: ...`), or is a `hint:` / `note:` line."""
    if msg.startswith(("error:", "hint:", "note:")) or _LOCATED.match(msg):
        return msg
    return f"error: {msg}"


def write_output(path: str, data: str | bytes | Writer) -> None:
    """Write the output file `path` atomically (`npu_dialects.files.write_atomic`: a
    failed write keeps the old file); a failure is the UserError `cannot write 'PATH':
    REASON`."""
    try:
        write_atomic(path, data)
    except OSError as e:
        raise UserError(cannot_write(e, path)) from None


def write_json(path: str, obj: Any) -> None:
    """`obj` as indented JSON to `path` (`-`: stdout), as `write_output` writes."""
    write_output(path, json.dumps(obj, indent=1, allow_nan=True))


def fmt_bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit} ({n} B)"
    return f"{n} B"


def cli_main(build_parser, run_args, argv: list[str] | None = None) -> int:
    """Shared entry of the tools: parse, run, map our errors to exit codes (1 diagnosed,
    2 usage) with one line per problem and no traceback unless NPU_DEBUG=1."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse printed the usage error (or --help)
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    debug = os.environ.get("NPU_DEBUG", "") not in ("", "0")
    try:
        return run_args(args)
    except UsageError as e:
        if debug:
            traceback.print_exc()
        print(error_line(str(e)), file=sys.stderr)
        if e.details:
            print(e.details, file=sys.stderr)
        return EXIT_USAGE
    except UserError as e:
        if debug:
            traceback.print_exc()
        for line in e.lines:
            print(error_line(line), file=sys.stderr)
        if e.details:
            print(e.details, file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except PluginError as e:  # (an installed plugin that does not load: the user's to fix)
        print(error_line(str(e)), file=sys.stderr)
        return EXIT_USER
    except BrokenPipeError:  # (stdout closed early, as by `| head`: not an error of ours)
        return EXIT_OK
    except Exception as e:
        if debug:
            traceback.print_exc()
        print(f"internal error: {type(e).__name__}: {e} (set NPU_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL


def console(main: Callable[[], int], compile_only: bool = False) -> Callable[[], NoReturn]:
    """A tool's console-script entry: `main()`, then the process ends without tearing its
    heap down (0.3-0.5 s after a large compile; LLVM's tools skip freeing the same
    way) once stdout and stderr are flushed. `compile_only` tools run with the cyclic
    collector paused throughout (`npu_dialects.files.collector_paused`)."""
    def entry() -> NoReturn:
        if compile_only:
            gc.disable()
        try:
            code = main()
        except SystemExit as e:  # (argparse's --help and usage errors)
            code = e.code if isinstance(e.code, int) else EXIT_USAGE
        except KeyboardInterrupt:  # (Ctrl-C outside a tool's own handling: its imports, argparse)
            print("error: interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # (a closed pipe, a closed or absent stream)
                pass
        os._exit(code)
    return entry
