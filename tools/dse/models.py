"""The models a sweep names: an `.onnx` path, a light-zoo name (`resnet50`, ... with
seeded random weights, `tools.testkit.zoo.prepare`) or a built-in generator below."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx


def _mobilenet_v2() -> onnx.ModelProto:
    from tools.testkit.models import mobilenet_v2
    return mobilenet_v2()


def _bert(seq: int) -> Callable[[], onnx.ModelProto]:
    def make() -> onnx.ModelProto:
        from tools.testkit.transformers import bert_layers
        return bert_layers(layers=2, seq=seq)
    return make


def _gpt2_decode() -> onnx.ModelProto:
    from tools.testkit.transformers import gpt2_block
    return gpt2_block(seq=1, past=127)


def _vit() -> onnx.ModelProto:
    from tools.testkit.transformers import vit_block
    return vit_block()


BUILTIN: dict[str, Callable[[], onnx.ModelProto]] = {
    "mobilenet_v2": _mobilenet_v2,  # MobileNetV2 at 224x224, width 1.0
    "bert_base_128": _bert(128),  # two BERT-base encoder layers, 128 tokens
    "bert_base_512": _bert(512),
    "gpt2_decode_p127": _gpt2_decode,  # a GPT-2-small block, one token against a KV cache of 127
    "vit_b16_block": _vit,
}


TRANSFORMERS = ("bert_base_128", "bert_base_512", "gpt2_decode_p127", "vit_b16_block")
"""Built-in models whose numerics need their own inputs (`model_inputs`)."""


def model_inputs(name: str, model: onnx.ModelProto) -> dict | None:
    """The inputs a `numerics` sweep feeds model `name`: a transformer block's
    (`testkit.transformers.block_inputs`: an attention mask of ones and zeros, not the
    standard-normal draw that would push every score thousands apart and make each
    softmax one-hot), None for the seeded random draw (`runtime.run.random_inputs`)."""
    if name not in TRANSFORMERS:
        return None
    from tools.testkit.transformers import block_inputs
    return block_inputs(model)


class ModelError(Exception):
    """A model name that resolves to nothing, or a file that is not an ONNX model."""


def display_name(name: str) -> str:
    """What tables call a model: a path's file stem, else the name itself."""
    return Path(name).stem if name.endswith(".onnx") else name


def known_names() -> list[str]:
    from tools.testkit.zoo import light_models
    try:
        zoo = sorted(light_models())
    except OSError:
        zoo = []
    return [*zoo, *BUILTIN]


def load(name: str, base_dir: Path | None = None) -> bytes:
    """The serialized model `name` names (raises ModelError)."""
    if name.endswith(".onnx"):
        path = Path(name)
        if not path.is_absolute() and not path.exists() and base_dir is not None:
            path = base_dir / name
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModelError(f"model '{name}': cannot read: {e.strerror or e}") from None
        try:
            onnx.load_from_string(data)
        except Exception:
            raise ModelError(f"model '{name}': not an ONNX model") from None
        return data
    if name in BUILTIN:
        return BUILTIN[name]().SerializeToString()
    from tools.testkit.zoo import light_models, prepare
    zoo = light_models()
    if name in zoo:
        return prepare(zoo[name])[0].SerializeToString()
    raise ModelError(f"unknown model '{name}' (an .onnx path, or one of {', '.join(known_names())})")
