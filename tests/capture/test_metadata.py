"""Captured argument metadata round-trips: tensors rebuilt from the JSON have the recorded shapes, dtypes,
strides and storage offsets, share storage where the program's did, are seeded, and take the first call's
values when they were saved; what cannot be described says why."""
from __future__ import annotations

import json

import pytest
import torch

from paretotune.capturing.kernel_info import has_main_guard
from paretotune.capturing.metadata import Undescribable, decode_scalar, describe, leaf_key, rebuild


def _arguments() -> list[object]:
    import triton.language as tl

    base = torch.randn(12, 10, dtype=torch.float16)
    flat = torch.randn(64)
    return [
        torch.randn(4, 8),                      # contiguous
        torch.randn(8, 4).t(),                  # transposed: strides (1, 4)
        base[3:, 1:],                           # a view with a storage offset
        flat, flat[8:40],                       # two views of one storage (an in-place kernel's in and out)
        torch.randint(5, 17, (30,)),            # an index tensor: rebuilt within its range
        torch.rand(7) > 0.5,                    # bool
        torch.tensor(3.0),                      # 0-d
        torch.empty(0, 5),                      # empty
        torch.randn(6, 1).expand(6, 5),         # expanded (a broadcast scale): strides (1, 0), elements shared
        torch.randn(3).expand(4, 3),            # strides (0, 1)
        3, 2.5, float("inf"), None, "mode", True, torch.bfloat16, tl.float16,
    ]


def test_rebuilt_tensors_have_the_recorded_layout_on_cpu_and_meta() -> None:
    args = _arguments()
    leaves = json.loads(json.dumps(describe(args, ranges=True)))  # through JSON, as written to disk
    for device in ("cpu", "meta"):
        built = rebuild(leaves, device, seed=0)
        for original, copy in zip(args, built, strict=True):
            if isinstance(original, torch.Tensor):
                assert copy.device.type == device
                assert (copy.shape, copy.dtype, copy.stride()) == (original.shape, original.dtype, original.stride())
                assert copy.storage_offset() % (256 // copy.element_size()) == \
                    original.storage_offset() % (256 // copy.element_size())  # alignment kept
            else:
                assert copy == original or (copy is original)
    built = rebuild(leaves, "cpu", seed=0)
    assert built[3].untyped_storage().data_ptr() == built[4].untyped_storage().data_ptr()  # still one storage
    assert built[4].data_ptr() - built[3].data_ptr() == args[4].data_ptr() - args[3].data_ptr()
    assert built[0].untyped_storage().data_ptr() != built[1].untyped_storage().data_ptr()
    index = built[5]
    assert index.dtype == torch.int64 and 5 <= int(index.min()) and int(index.max()) <= 16
    assert leaves[5]["tensor"]["range"] == [int(args[5].min()), int(args[5].max())]
    assert rebuild(leaves, "cpu", seed=0)[0].equal(built[0])      # seeded
    assert not rebuild(leaves, "cpu", seed=1)[0].equal(built[0])  # and the seed matters


def test_the_first_calls_values_are_restored_exactly() -> None:
    args = _arguments()
    leaves = describe(args)
    saved = [a.clone() if isinstance(a, torch.Tensor) else None for a in args]
    built = rebuild(leaves, "cpu", seed=0, values=saved)
    for original, copy in zip(args, built, strict=True):
        if isinstance(original, torch.Tensor):
            assert torch.equal(copy, original)


def test_scalars_decode_to_what_was_passed() -> None:
    import triton.language as tl

    leaves = describe([7, -1.5, float("-inf"), None, torch.float8_e4m3fn, tl.bfloat16])
    assert [decode_scalar(json.loads(json.dumps(leaf))) for leaf in leaves] == [7, -1.5, float("-inf"), None,
                                                                                torch.float8_e4m3fn, tl.bfloat16]


def test_what_cannot_be_described_says_why() -> None:
    with pytest.raises(Undescribable, match="sparse"):
        describe([torch.randn(3, 3).to_sparse()])
    with pytest.raises(Undescribable, match="a builtins.object"):
        describe([object()])


def test_signature_keys_tell_layouts_apart() -> None:
    x = torch.randn(64, 64)
    assert leaf_key(x) == leaf_key(torch.randn(64, 64))
    assert leaf_key(x) != leaf_key(x.t())                          # strides
    assert leaf_key(x) != leaf_key(x.half())                       # dtype
    assert leaf_key(x.view(-1)[1:]) != leaf_key(x.view(-1)[4:])    # 16-byte alignment (what Triton specializes on)
    assert leaf_key(1) != leaf_key(True) and leaf_key(2) != leaf_key(2.0)


def test_a_program_file_is_importable_only_with_a_main_guard(tmp_path) -> None:  # noqa: ANN001
    guarded, bare = tmp_path / "guarded.py", tmp_path / "bare.py"
    guarded.write_text("def f(): pass\n\nif __name__ == '__main__':\n    f()\n")
    bare.write_text("def f(): pass\n\nf()\n")
    assert has_main_guard(str(guarded)) and not has_main_guard(str(bare))


def test_the_grid_of_a_launch_whose_record_lacks_a_constexpr_of_the_config() -> None:
    """Liger's RMSNorm on the H200 (2026-12-02): the captured config held ``casting_mode`` (passed by keyword)
    while the launch's record did not, and the campaign failed with "the program never launched config ..."."""
    from paretotune.capturing.replay import grid_for

    signature = {"launches": [{"config": {"elementwise_affine": True, "BLOCK_SIZE": 2048, "num_warps": 8},
                               "grid": [4096]}]}
    config = {"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": 2048, "num_warps": 8}
    assert grid_for(signature, config) == (4096,)
    with pytest.raises(ValueError, match="never launched"):  # a constexpr both have, with another value, still differs
        grid_for(signature, {**config, "BLOCK_SIZE": 1024})
