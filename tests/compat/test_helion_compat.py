"""Each of Helion's internals that :mod:`paretotune.compat.helion` relies on, pinned against the installed Helion:
the private name exists with the shape paretotune uses, and each swap is seen where Helion looks."""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.user_code import import_object
from paretotune.compat import helion as compat_helion
from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS

helion = compat_helion.import_helion()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WIDE = Shape(label="wide", params={"M": 512, "N": 4096})


def adapter(folder: str = "helion_aot", source: str = "scale_rows.py:scale_rows") -> HelionAdapter:
    kernel = import_object(source, FIXTURES / folder, "test")
    factory = import_object(source.split(":")[0] + ":inputs", FIXTURES / folder, "test")
    made = HelionAdapter("k", spec_from_kernel(kernel, factory))
    made.use_campaign((WIDE,), TARGETS["sm_90"], False)
    return made


def test_the_tensor_descriptor_question_is_answered_as_told() -> None:
    from helion import _compat

    original = _compat._supports_tensor_descriptor
    assert not inspect.signature(original).parameters  # asked with no arguments
    for answer in (True, False):
        with compat_helion.tensor_descriptors(answer):
            assert _compat.supports_tensor_descriptor() is answer  # Helion's own callers see the swap
    assert _compat._supports_tensor_descriptor is original


def test_the_sm_count_is_answered_as_told() -> None:
    import torch
    from helion import runtime

    assert "reserved_sms" in inspect.signature(runtime.get_num_sm).parameters
    from helion import _compat
    from helion.autotuner import config_spec

    assert "num_compute_units" in vars(config_spec)  # imported by name: swapped there too
    with compat_helion.num_sms(77):
        assert runtime.get_num_sm(torch.device("cpu")) == 77
        assert _compat.num_compute_units() == 77 and config_spec.num_compute_units() == 77
    assert runtime.get_num_sm.__module__.startswith("helion")
    assert config_spec.num_compute_units is _compat.num_compute_units


def test_the_tma_decision_exists_and_is_swapped_for_the_block() -> None:
    from helion._compiler import device_function

    original = device_function._selects_tma_access
    assert list(inspect.signature(original).parameters) == ["config"]
    assert callable(getattr(device_function.CompileEnvironment, "current", None))
    with compat_helion.tma_decision_as(90):
        assert device_function._selects_tma_access is not original
    assert device_function._selects_tma_access is original


def test_hardware_info_takes_the_four_fields_and_falls_back_to_older_capabilities() -> None:
    from helion._hardware import HardwareInfo

    assert [f for f in HardwareInfo.__dataclass_fields__] == ["device_kind", "hardware_name", "runtime_version",
                                                              "compute_capability"]
    ids = compat_helion.compatible_compute_ids(90)
    assert ids[0] == "sm90" and "sm80" in ids


def test_heuristic_discovery_asks_the_swapped_hardware_info() -> None:
    from helion.autotuner import aot_cache

    original = aot_cache.get_hardware_info
    assert callable(aot_cache.clear_heuristic_cache) and callable(aot_cache.get_aot_data_dir)
    assert list(inspect.signature(aot_cache.find_heuristic_file).parameters)[:3] == ["kernel_source_file",
                                                                                      "kernel_name", "data_dir"]
    with compat_helion.heuristic_lookup_as(86):
        assert aot_cache.get_hardware_info().compute_capability == "sm86"
    assert aot_cache.get_hardware_info is original


def test_an_aot_kernel_keeps_its_user_key_where_compat_reads_it() -> None:
    keyed = import_object("rows_keyed.py:scale_keyed", FIXTURES / "helion_native", "test")
    plain = import_object("scale_rows.py:scale_rows", FIXTURES / "helion_aot", "test")
    assert callable(compat_helion.aot_user_key(keyed)) and compat_helion.has_aot_user_key_slot(keyed)
    assert compat_helion.aot_user_key(plain) is None


def test_a_key_value_is_flattened_with_dtypes_as_element_sizes() -> None:
    import torch

    assert compat_helion.flatten_key_value((4096, torch.float16, [1, (2.5, "x")])) == [4096, 2, 1, 2.5, "x"]


def test_normalize_takes_the_fix_invalid_keyword_fills_missing_keys_and_refuses_a_bad_value() -> None:
    spec = adapter().config_spec(WIDE)
    assert "_fix_invalid" in inspect.signature(spec.normalize).parameters
    default = dict(spec.default_config().config)
    for fix in (False, True):
        partial = {"block_sizes": default["block_sizes"], "num_warps": 8}
        compat_helion.normalize(spec, partial, fix_invalid=fix)
        assert partial == {**default, "num_warps": 8}
    with pytest.raises(helion.exc.InvalidConfig):
        compat_helion.normalize(spec, {**default, "block_sizes": [3]}, fix_invalid=False)


def test_a_bound_kernel_holds_the_config_it_was_set_to() -> None:
    made = adapter()
    bound, _ = made.aot.bind(WIDE, 132)
    config = made.helion_config(made.default_config(WIDE))
    bound.set_config(config)
    assert dict(compat_helion.bound_config(bound)) == dict(config)


def test_a_host_function_takes_a_launcher_and_passes_helions_own_keywords_with_a_prefix() -> None:
    made = adapter()
    bound, args = made.aot.bind(WIDE, 132)
    host = bound.compile_config(made.helion_config(made.default_config(WIDE)), allow_print=False)
    assert "_launcher" in inspect.signature(host).parameters
    seen: list[dict[str, Any]] = []

    def launcher(jit_fn: Any, grid: Any, *kernel_args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    with compat_helion.num_sms(132):
        compat_helion.run_host(host, args, launcher)
    assert seen and {"num_warps", "num_stages"} <= set(seen[0])
    assert not any(k.startswith("_") for k in compat_helion.triton_options(seen[0]))


def test_the_external_adapter_takes_any_configspec_and_a_search_takes_a_provider() -> None:
    from helion.autotuner import search_algorithms
    from helion.autotuner.external import _ExternalKernelAdapter

    params = list(inspect.signature(_ExternalKernelAdapter.__init__).parameters)
    assert params[:4] == ["self", "config_spec", "compile_fn", "args"] and "device" in params
    spec = adapter().config_spec(WIDE)
    kernel = compat_helion.external_kernel(spec, autotune_random_seed=1)
    assert kernel.config_spec is spec and kernel.settings.autotune_random_seed == 1
    cls = compat_helion.without_gpu_retiming(search_algorithms["LFBOTreeSearch"])
    for name in ("rebenchmark", "final_rebenchmark_best"):  # the methods replaced exist in Helion's search
        assert callable(getattr(search_algorithms["LFBOTreeSearch"], name))
    search = cls(kernel, ())
    assert hasattr(search, "_benchmark_provider_cls")  # the attribute _prepare builds its provider from
    compat_helion.use_benchmark_provider(search, dict)
    assert search._benchmark_provider_cls is dict


def test_capture_wraps_kernel_call_and_puts_it_back() -> None:
    import importlib

    module = importlib.import_module(compat_helion.KERNEL_MODULE)
    original = module.Kernel.__dict__["__call__"]
    calls: list[Any] = []
    undo = compat_helion.wrap_kernel_call(module, lambda k, orig, a, kw: calls.append(a))
    try:
        assert module.Kernel.__call__.__wrapped__ is original
    finally:
        undo()
    assert module.Kernel.__dict__["__call__"] is original


def test_helion_on_older_torch_finds_the_name_it_imports() -> None:
    from torch._inductor.runtime import triton_compat

    assert issubclass(triton_compat.IntelGPUError, Exception)  # torch's own, or the stand-in


def test_helion_is_told_the_gpu_is_not_amd_without_asking_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU host Helion's is_hip() asks torch.cuda.current_device() (initializing CUDA) the first time a kernel
    is defined or compiled; after paretotune's import it answers without asking (the campaign process and the
    build workers never run a kernel)."""
    import torch
    from helion import _compat

    asked: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append("is_available") or True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: asked.append("current_device") or 0)
    if hasattr(_compat._is_hip, "cache_clear"):  # Helion's own, cached: asked again, it would ask CUDA
        _compat._is_hip.cache_clear()
    assert _compat.is_hip() is False and asked == []
    assert "return _is_hip()" in inspect.getsource(_compat.is_hip)  # the name Helion's own callers reach it by


def test_helion_is_told_an_nvidia_target_takes_maxnreg_without_asking_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a GPU Helion answered "no maxnreg" and dropped it from its ConfigSpec, configs and launch; it caps
    maxnreg by the register file, which it asks the current CUDA device for. After paretotune's import both answer
    as an NVIDIA target, asking nothing; the names are the ones Helion's callers reach them by."""
    import torch
    from helion import _compat
    from helion.autotuner import config_spec

    from paretotune.compat.helion import REGISTERS_PER_SM, import_helion

    import_helion()
    asked: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append("is_available") or False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a: asked.append("properties"))
    assert _compat.supports_maxnreg() is True
    assert config_spec._regs_per_block() == _compat._regs_per_block() == REGISTERS_PER_SM and asked == []
    assert "return _supports_maxnreg()" in inspect.getsource(_compat.supports_maxnreg)
    assert "_regs_per_block()" in inspect.getsource(config_spec)  # caps maxnreg by it, imported by name
