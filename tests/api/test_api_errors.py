"""Errors from the Python API name the caller's own things: the function passed as ``kernel=`` (its name, file
and line) and the field, and "campaign" for a campaign given as a dict, never the name the object was
registered under for the workers (``<name>_<hash>``) nor the stand-in file a dict campaign is loaded as."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import triton
import triton.language as tl

import paretotune
from paretotune.errors import UserError

HERE = Path(__file__).resolve()


@triton.jit
def api_bare_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def api_plain_function(x: Any) -> Any:
    return x


def _campaign(**search: Any) -> dict[str, Any]:
    return {"name": "api-errors", "shapes": [{"n": 1024}], "objectives": ["registers"],
            "acf": {"search_space": "ptxas-13.3"},
            "search": {"engine": "random", "generations": 1, "pool_size": 6, **search}}


def _no_internal_name(message: str, tmp_path: Path) -> None:
    assert not re.search(r"_[0-9a-f]{12}\b", message), message  # the registered name's hash
    assert "paretotune.kernels.inline" not in message and ".campaign" not in message, message
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("kernel", "what"), [
    (api_bare_kernel, "is a bare Triton kernel"),
    (api_plain_function, "is a function, not a TritonKernel or HelionKernel spec"),
])
def test_a_wrong_kernel_object_is_named_by_its_function_file_and_line(kernel: Any, what: str,
                                                                      tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        paretotune.run(_campaign(), kernel=kernel, out=tmp_path / "run", quiet=True)
    message = str(caught.value)
    code = (kernel.fn if hasattr(kernel, "fn") else kernel).__code__
    name = code.co_name
    assert message.startswith(f"campaign: kernel.source: '{name}' ({HERE}:{code.co_firstlineno}) {what}"), message
    _no_internal_name(message, tmp_path)
    if "bare Triton" in what:  # the advice fits an object: pass a spec, not "name X_spec in the campaign"
        assert f"pass `paretotune.TritonKernel({name}, inputs=" in message and "_spec" not in message, message


def test_a_bad_field_of_a_dict_campaign_names_the_campaign_not_a_stand_in_file(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        paretotune.run(_campaign(pool_size=4), kernel=api_bare_kernel, out=tmp_path / "run", quiet=True)
    assert str(caught.value).startswith("campaign: search.pool_size: "), str(caught.value)
    _no_internal_name(str(caught.value), tmp_path)
