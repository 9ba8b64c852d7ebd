"""Write a shipped AOT heuristic in Helion's own format: the kernel's current heuristic, verbatim, plus a table of
the buckets whose config changed.

Helion (``helion/autotuner/aot_cache.py``, ``aot_kernel.py``) loads ``_helion_aot_<file>_cuda_sm90.py`` beside
the kernel (or from ``$HELION_HEURISTIC_DIR``), keys its specialization cache with ``key_<kernel>(*args)`` and
asks ``autotune_<kernel>(*args)`` for a config dict (for a kernel with a user key, both get the flattened key).
The shipped module keeps that contract by construction:

- the original module's source comes first, unchanged, so ``key_<kernel>`` is the very same function (the same
  buckets, the same cache key) and every shape is dispatched exactly as before;
- then ``autotune_<kernel>`` is wrapped: it asks the original, and only where the bucket is in the table *and*
  the original answered with the config that was validated there does it return the new config (the old one
  plus ``advanced_controls_file``, or a searched config with its ACF). Everything else gets the original answer;
- the ACFs lie in ``acf/<sha256>.acf`` beside the module, and their paths are made at import time from the
  module's own location (Triton splits ``ptx_options`` on spaces, so a folder with a space applies no ACF).
  Where the ACFs cannot be applied (a file missing, ``TRITON_PTXAS_PATH`` not a ptxas of the ACFs' release)
  the module warns once and every bucket keeps its old config.

Helion's own generator writes config dicts as ``repr`` lines (``heuristic_generator.generate_configs_code``);
the table here is written the same way.
"""
from __future__ import annotations

import ast
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from paretotune.kernels.acf_ready import readiness

ACF_KEY = "advanced_controls_file"


@dataclass(frozen=True)
class Change:
    """One bucket's new config: ``old`` is what the original heuristic returned for its validated shapes,
    ``new`` what ships (without the ACF), ``acf`` the file name under ``acf/`` (None: no ACF)."""

    bucket: Hashable
    old: dict[str, Any]
    new: dict[str, Any]
    acf: str | None


def literal_bucket(bucket: Any) -> bool:
    """Whether a bucket value can be written into the table and read back equal (ints, strings, tuples...)."""
    try:
        return ast.literal_eval(repr(bucket)) == bucket and hash(bucket) is not None
    except (ValueError, SyntaxError, TypeError):
        return False


def _config_text(config: dict[str, Any], acf: str | None) -> str:
    """A config dict as Python source, ``advanced_controls_file`` made from the module's folder at import."""
    body = {k: v for k, v in config.items() if k != ACF_KEY}
    text = repr(body)
    if acf is None:
        return text
    entry = f"{ACF_KEY!r}: _paretotune_acf({acf!r})"
    return "{" + entry + "}" if text == "{}" else text[:-1] + ", " + entry + "}"


def render(original: str, kernel: str, has_key: bool, changes: Sequence[Change], header: Sequence[str],
           ptxas_release: str) -> str:
    """The shipped module's text: ``header`` (comment lines), the original source, the override section."""
    lines = [f"# {h}" if h else "#" for h in header]
    table = "".join(f"    {c.bucket!r}: (\n        {c.old!r},\n        {_config_text(c.new, c.acf)},\n    ),\n"
                    for c in changes)
    acfs = sorted({c.acf for c in changes if c.acf})
    bucket_of = (f"key_{kernel}(*args)" if has_key else
                 "_paretotune_json.dumps(_paretotune_plain(config), sort_keys=True, default=repr)")
    return "\n".join(lines) + "\n" + original.rstrip("\n") + "\n\n" + OVERRIDE.format(
        kernel=kernel, table=table, readiness=readiness(acfs, ptxas_release), bucket_of=bucket_of,
        bucket_doc=f"key_{kernel}(*args), as Helion keys its cache" if has_key else
        "the original config itself: this heuristic has no key function")


OVERRIDE = '''
# =============================================================================================================
# paretotune ship: everything above is the kernel's previous heuristic, verbatim. Below, autotune_{kernel}
# is wrapped: a bucket ({bucket_doc}) listed in _PARETOTUNE_NEW gets its new config where the previous
# heuristic answers with the config that was validated there; every other call gets the previous answer.
# =============================================================================================================
import json as _paretotune_json
{readiness}
# bucket -> (the previous config, validated there; the config shipped for it)
_PARETOTUNE_NEW = {{
{table}}}

_paretotune_previous_autotune_{kernel} = autotune_{kernel}


def _paretotune_plain(config):
    inner = getattr(config, "config", config)
    return dict(inner) if isinstance(inner, dict) else inner


def autotune_{kernel}(*args) -> dict:
    """Select the config for the given arguments: the previous heuristic's, or a changed bucket's new one."""
    config = _paretotune_previous_autotune_{kernel}(*args)
    if _PARETOTUNE_NOT_READY is None and _PARETOTUNE_NEW:
        try:
            entry = _PARETOTUNE_NEW.get({bucket_of})
        except TypeError:  # an unhashable bucket is none of the changed ones
            entry = None
        if entry is not None and _paretotune_plain(config) == entry[0]:
            return dict(entry[1])
    return config
'''
