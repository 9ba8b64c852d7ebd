"""An @triton.autotune kernel, written the usual way and tuned unchanged: its configs are the searched list,
its first config the baseline, its `key` argument (n_cols) comes from the campaign's shape."""
import torch
import triton
import triton.language as tl

from paretotune import TritonKernel


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w, num_stages=1) for b in (1024, 2048, 4096) for w in (4, 8, 16)],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: [
        c for c in configs if c.kwargs["BLOCK"] >= nargs["n_cols"]]},  # one block holds a whole row
)
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * row_stride + cols, (x / rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm_inputs(shape):
    rows, cols = shape["rows"], shape["n_cols"]
    return {"x_ptr": torch.randn(rows, cols, dtype=torch.float16), "w_ptr": torch.randn(cols, dtype=torch.float16),
            "out_ptr": torch.empty(rows, cols, dtype=torch.float16)}


rms_norm = TritonKernel(
    rms_norm_kernel,
    inputs=rms_norm_inputs,
    grid=lambda meta: (meta["x_ptr"].shape[0],),
    args=lambda t, shape, config: {"row_stride": t["x_ptr"].stride(0), "eps": 1e-6},
    reference=lambda t: (t["x_ptr"].float() * torch.rsqrt(t["x_ptr"].float().pow(2).mean(-1, keepdim=True) + 1e-6)
                         * t["w_ptr"].float()).half(),
)
