"""Run by tests/kernels/test_helion_in_place_launch.py in a child with ``TRITON_INTERPRET=1`` (the Triton
interpreter runs a Helion kernel on CPU tensors): prints one JSON line about an in-place Helion kernel whose input
factory declares the argument it writes (``outputs``), as Helion's fp8 quant kernels and scaled_mm do."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from paretotune.campaign.user_code import import_object
from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
from paretotune.measure.arms import check_candidate
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "helion_native"


class OpLog(TorchDispatchMode):
    """Every aten op dispatched while it is active (the interpreter's kernel body runs in numpy, not here)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


def main() -> None:
    kernel = import_object("outputs.py:halve_rows_in_place", FIX, "test")
    factory = import_object("outputs.py:inputs", FIX, "test")
    factory.outputs = (0,)  # the factory says which argument the kernel writes
    spec = spec_from_kernel(kernel, factory)
    shape = Shape("s", {"M": 16, "N": 32})
    adapter = HelionAdapter("halve", spec)
    adapter.use_campaign((shape,), TARGETS["sm_90"], True)
    base = adapter.default_config(shape)
    inputs = adapter.make_inputs(shape, "cpu", 0)
    prepared = adapter.prepare(base, shape, None, inputs)
    with OpLog() as log:
        returned = prepared.launch()
    args = inputs["args"]

    class WritesWrong(HelionAdapter):
        """Its non-baseline configs add 1 to the written argument after the kernel: a wrong answer."""

        def prepare(self, config, shape, acf, inputs):  # type: ignore[no-untyped-def]
            prepared = super().prepare(config, shape, acf, inputs)
            if config == base:
                return prepared
            once, x = prepared.launch, inputs["args"][0]
            return dataclasses.replace(prepared, launch=lambda: (once(), x.add_(1.0))[0])

    wrong = WritesWrong("halve", spec)
    wrong.use_campaign((shape,), TARGETS["sm_90"], True)
    other = {**base, "num_warps": 8 if base.get("num_warps") != 8 else 4}
    json.dump({"returned": None if returned is None else type(returned).__name__, "launch_ops": log.ops,
               "writes_are_args": [any(t is a for a in args) for t in getattr(prepared, "writes", ())],
               "baseline_check": check_candidate(adapter, base, shape, None, "cpu", seed=11),
               "right_candidate_check": check_candidate(adapter, other, shape, None, "cpu", seed=11),
               "wrong_candidate_check": check_candidate(wrong, other, shape, None, "cpu", seed=11)}, sys.stdout)


if __name__ == "__main__":
    main()
