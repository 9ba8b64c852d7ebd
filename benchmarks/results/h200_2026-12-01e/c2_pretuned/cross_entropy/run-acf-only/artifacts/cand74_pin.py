# Pinned by paretotune: validated speedup vs the default build (4096x32000: 1.047x, 2048x128256: 1.037x).
# ACF: +4.7 % (4096x32000), +3.7 % (2048x128256) over the same config without it.
# Kernel spec: /work/main/.workloads/helion-pretuned-sm90/cross_entropy/cross_entropy.py:cross_entropy. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand74_0924866f0795.acf"))
import helion

CONFIG = helion.Config(**{'atomic_indexing': [], 'block_sizes': [1], 'indexing': ['pointer', 'pointer', 'tensor_descriptor', 'tensor_descriptor', 'tensor_descriptor', 'pointer'], 'load_eviction_policies': ['first', 'first', 'first', 'first', ''], 'num_stages': 1, 'num_warps': 16, 'pid_type': 'flat', 'range_flattens': [None], 'range_multi_buffers': [None], 'range_num_stages': [0], 'range_unroll_factors': [0], 'range_warp_specializes': [], 'reduction_loops': [None]}, advanced_controls_file=ACF)
# use: helion.kernel(config=CONFIG, static_shapes=True)(fn)
