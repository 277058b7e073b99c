"""The light zoo and the transformers together: the geometric mean of simulated /
roofline cycles over the rows of `bench/results/roofline.md` (the 12-model table)
and `bench/results/transformers.md` (BERT-base, GPT-2, ViT-B/16 at real size), the
figure issue 15's target (<= 2.0) names, and of simulated / attainable
(`bench/attainable.py`; issue 48) where the tables have that column. It reads the
committed tables (or those of `--results DIR`), so rerun
those first (`python bench/roofline.py --out ...`, `python bench/transformers.py
--out ...`); each model's log ratio shows what it weighs.

    python bench/geomean.py [--out bench/results/geomean.md]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import close_table  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TABLES = ("roofline.md", "transformers.md")


def rows(path: str) -> dict[str, tuple[int, int, int | None]]:
    """{model: (cycles, roofline, attainable)} of a results table whose columns start
    model | cycles | roofline; attainable from its `attainable` column (None when the
    table has none, as before issue 48)."""
    out = {}
    at = None
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.split("|")]
            if "attainable" in cells and cells[1:4] == ["model", "cycles", "roofline"]:
                at = cells.index("attainable")
            if len(cells) > 4 and cells[2].isdigit() and cells[3].isdigit():
                bound = int(cells[at]) if at is not None and cells[at].isdigit() else None
                out[cells[1]] = (int(cells[2]), int(cells[3]), bound)
    return out


def int8_ratios(path: str) -> dict[str, float]:
    """{model: int8 simulated / int8 roofline} from the last column, `cycles (ratio)`."""
    out = {}
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.split("|")]
            m = re.fullmatch(r"\d+ \(([0-9.]+)\)", cells[-2]) if len(cells) > 4 and cells[2].isdigit() else None
            if m:
                out[cells[1]] = float(m.group(1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the table here (markdown)")
    ap.add_argument("--results", default=RESULTS, help="the directory of roofline.md and transformers.md")
    args = ap.parse_args()
    where = "bench/results" if os.path.abspath(args.results) == RESULTS else args.results
    lines = ["`python bench/geomean.py` (from " + ", ".join(f"`{where}/{t}`" for t in TABLES) + ")", "",
             "| model | table | cycles | roofline | ratio | ln ratio | attainable | / attainable |",
             "|---|---|---|---|---|---|---|---|"]
    logs, attained = [], []
    for table in TABLES:
        for name, (cycles, roof, bound) in rows(os.path.join(args.results, table)).items():
            logs.append(math.log(cycles / roof))
            cells = "| - | - |" if bound is None else f"| {bound} | {cycles / bound:.2f} |"
            attained += [] if bound is None else [math.log(cycles / bound)]
            lines.append(f"| {name} | {table} | {cycles} | {roof} | {cycles / roof:.2f} | {logs[-1]:.4f} {cells}")
    if not logs:
        print("error: no model rows in " + ", ".join(TABLES), file=sys.stderr)
        return 1
    above = sum(logs) - len(logs) * math.log(2.0)
    int8 = [math.log(r) for t in TABLES for r in int8_ratios(os.path.join(args.results, t)).values()]
    int8_gm = (f"; int8 (QDQ) simulated/int8 roofline {math.exp(sum(int8) / len(int8)):.4f} over {len(int8)} "
               "models") if int8 else ""
    att_gm = (f"; simulated/attainable {math.exp(sum(attained) / len(attained)):.4f} over {len(attained)} models "
              "(targets: <= 1.25 against the attainable bound, <= 1.6 against the roofline)") if attained else ""
    return close_table(lines, f"geometric mean simulated/roofline {math.exp(sum(logs) / len(logs)):.4f} over "
                              f"{len(logs)} models (sum of ln ratios {above:+.4f} against a mean of 2.0){att_gm}"
                              f"{int8_gm}", args.out)

if __name__ == "__main__":
    sys.exit(main())
