"""Write a shipped launch table for a Triton kernel: per key, the launch keyword arguments to call it with.

A Triton kernel has no heuristic file its runtime loads: ``@triton.autotune`` times its configs on the first call
per ``key``, and ``triton.Config`` has no field for ``ptx_options`` (Triton 3.6 and 3.9), so an ACF cannot ride in
an autotune config list. The drop-in is therefore a table keyed like the autotuner's ``key`` (the campaign's
shape sizes for a plain ``@triton.jit`` kernel): ``kernel[grid](*args, **launch_kwargs(*key))``, calling an
autotuned kernel's ``.fn`` (its JIT function) so that the autotuner does not re-pick. ``PREVIOUS`` holds what
the campaign measured as the baseline for each key, ``SHIPPED`` the validated winners with
``ptx_options='--apply-controls <acf>'`` (the path made at import from the module's folder).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paretotune.kernels.acf_ready import readiness


@dataclass(frozen=True)
class Entry:
    key: tuple[Any, ...]
    previous: dict[str, Any]
    shipped: dict[str, Any] | None  # None: unchanged
    acf: str | None


def _kwargs_text(config: dict[str, Any], acf: str | None) -> str:
    text = repr(config)
    if acf is None:
        return text
    entry = f"'ptx_options': '--apply-controls ' + _paretotune_acf({acf!r})"
    return "{" + entry + "}" if text == "{}" else text[:-1] + ", " + entry + "}"


def render(key_names: Sequence[str], entries: Sequence[Entry], header: Sequence[str], ptxas_release: str) -> str:
    acfs = sorted({e.acf for e in entries if e.acf})
    previous = "".join(f"    {e.key!r}: {e.previous!r},\n" for e in entries)
    shipped = "".join(f"    {e.key!r}: {_kwargs_text(e.shipped, e.acf)},\n" for e in entries if e.shipped is not None)
    return ("\n".join(f"# {h}" if h else "#" for h in header) + '\n"""Launch options shipped by paretotune: '
            "kernel[grid](*args, **launch_kwargs(*key)).\"\"\"\n" + readiness(acfs, ptxas_release) +
            f"\nKEY = {tuple(key_names)!r}  # the values launch_kwargs takes, in this order\n\n"
            "# key -> the launch keyword arguments the campaign's baseline ran with (no ACF)\n"
            f"PREVIOUS = {{\n{previous}}}\n\n"
            "# key -> the validated winner's launch keyword arguments (ptx_options applies its ACF)\n"
            f"SHIPPED = {{\n{shipped}}}\n\n\n" + LOOKUP)


LOOKUP = '''def launch_kwargs(*key):
    """Keyword arguments for ``kernel[grid](*args, **launch_kwargs(*key))``: the shipped winner's where one was
    validated for ``key`` (and its ACF can be applied here), else the previous ones; None for a key the campaign
    never measured. For an ``@triton.autotune`` kernel call its ``.fn`` (triton.Config carries no ptx_options)."""
    key = tuple(key)
    if _PARETOTUNE_NOT_READY is None and key in SHIPPED:
        return dict(SHIPPED[key])
    found = PREVIOUS.get(key)
    return None if found is None else dict(found)
'''
