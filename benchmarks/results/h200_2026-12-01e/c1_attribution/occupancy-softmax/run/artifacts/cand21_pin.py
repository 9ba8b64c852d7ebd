# Pinned by paretotune: validated speedup vs the default build (wide: 1.212x).
# ACF: +0.8 % over the same config without it.
# Kernel spec: paretotune.kernels.bundled.softmax:triton_softmax. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand21_860ba7c1592d.acf"))
LAUNCH_KWARGS = dict(num_stages=1, num_warps=16, ptx_options=f"--apply-controls {ACF}")
# use: kernel[grid](*args, **LAUNCH_KWARGS)
