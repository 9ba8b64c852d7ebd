"""The bundled kernels the tests cover, and the shape each test compiles (imported by tests as ``kernel_cases``)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bundled:
    """A bundled kernel: where the campaign finds it, and the shape its tests compile."""

    source: str  # module:attr, as a campaign's kernel.source names it
    shape: str

    @property
    def name(self) -> str:
        return self.source.rpartition(":")[2]

    def spec(self) -> Any:
        module, _, attr = self.source.rpartition(":")
        return getattr(importlib.import_module(module), attr)

    def adapter(self) -> Any:
        from paretotune.kernels.registry import adapter_for

        return adapter_for(self.spec(), self.name, "test")

    def shape_record(self) -> Any:
        from paretotune.records import Shape

        return Shape(label=self.shape, params=self.spec().shapes[self.shape])


BUNDLED = (
    Bundled("paretotune.kernels.bundled.helion_softmax:helion_softmax", "square"),
    Bundled("paretotune.kernels.bundled.helion_rms_norm:helion_rms_norm", "llm"),
    Bundled("paretotune.kernels.bundled.layer_norm:triton_layer_norm", "llm"),
    Bundled("paretotune.kernels.bundled.matmul:triton_matmul", "square"),
)


def ptx_code(ptx: str) -> str:
    """PTX without debug line info: Helion's host code for an ACF shifts source lines, not instructions."""
    body = ptx.split("\t.section\t.debug", 1)[0]
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith((".loc", ".file", "$L__")))
