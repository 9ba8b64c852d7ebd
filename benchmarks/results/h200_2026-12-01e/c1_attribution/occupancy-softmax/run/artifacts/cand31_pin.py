# Pinned by paretotune: validated speedup vs the default build (wide: 1.202x).
# ACF: none (compiler defaults), so no ACF share.
# Kernel spec: paretotune.kernels.bundled.softmax:triton_softmax. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = ""  # compiler defaults
LAUNCH_KWARGS = dict(num_stages=1, num_warps=16)
# use: kernel[grid](*args, **LAUNCH_KWARGS)
