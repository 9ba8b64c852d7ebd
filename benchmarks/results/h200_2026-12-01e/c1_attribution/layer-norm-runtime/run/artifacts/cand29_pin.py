# Pinned by paretotune: validated speedup vs the default build (llm: 1.029x).
# ACF: +2.9 % over the same config without it.
# Kernel spec: paretotune.kernels.bundled.layer_norm:triton_layer_norm. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand29_552273f0afa4.acf"))
LAUNCH_KWARGS = dict(BLOCK_SIZE=4096, num_stages=3, num_warps=8, ptx_options=f"--apply-controls {ACF}")
# use: kernel[grid](*args, **LAUNCH_KWARGS)
