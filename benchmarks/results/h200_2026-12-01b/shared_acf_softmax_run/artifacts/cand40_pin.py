# Pinned by paretotune: validated speedup vs the default build (s4k: 1.003x, s8k: 1.009x, s16k: 1.110x).
# ACF: -0.1 % (s4k), -0.3 % (s8k), +3.1 % (s16k) over the same config without it.
# Kernel spec: paretotune.kernels.bundled.softmax:triton_softmax. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand40_1cf807195a10.acf"))
LAUNCH_KWARGS = dict(num_stages=1, num_warps=8, ptx_options=f"--apply-controls {ACF}")
# use: kernel[grid](*args, **LAUNCH_KWARGS)
