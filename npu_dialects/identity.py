"""xDSL's IR objects (values, operations, blocks, regions) compare by identity and hash
by `id` through Python-level `__eq__` and `__hash__` methods: exactly `object`'s
semantics, at the cost of a Python call for every dict or set operation keyed by them.
The compiler keys many maps by values and ops (npu-layer-group's search makes ~20
million such lookups on a two-layer int8 decoder), so this module gives the xDSL bases
that define them `object`'s own slots back (`fast_identity`). Equality stays identity and
each object's hash stays fixed for its lifetime; only the hash values differ
(`object.__hash__` rotates the address), which reorders nothing but the iteration of
sets - already address-dependent, so no output may depend on it (executables are
byte-identical from run to run, and with and without this module).

Applied when imported, by `npu_dialects.dtypes` (every dialect module imports it), so
before any IR object of ours exists: an object hashed into a dict under one function
would not be found under the other.
"""

from __future__ import annotations

from xdsl.ir import core
from xdsl.irdl import operations


def fast_identity() -> None:
    """Give xDSL's identity-hashed bases `object.__hash__` and `object.__eq__`."""
    for cls in (core.SSAValue, core._IRNode, operations.IRDLOperation):  # pyright: ignore[reportPrivateUsage]
        setattr(cls, "__hash__", object.__hash__)
        setattr(cls, "__eq__", object.__eq__)


fast_identity()
