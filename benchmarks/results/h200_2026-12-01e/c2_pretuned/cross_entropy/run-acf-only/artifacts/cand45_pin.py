# Pinned by paretotune: validated speedup vs the default build (4096x32000: 1.066x, 2048x128256: 1.020x).
# ACF: +6.5 % (4096x32000), +2.0 % (2048x128256) over the same config without it.
# Kernel spec: /work/main/.workloads/helion-pretuned-sm90/cross_entropy/cross_entropy.py:cross_entropy. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand45_7453b8097195.acf"))
import helion

CONFIG = helion.Config(**{'atomic_indexing': [], 'block_sizes': [1], 'indexing': ['pointer', 'pointer', 'tensor_descriptor', 'tensor_descriptor', 'tensor_descriptor', 'pointer'], 'load_eviction_policies': ['first', 'first', 'first', 'first', ''], 'num_stages': 1, 'num_warps': 16, 'pid_type': 'flat', 'range_flattens': [None], 'range_multi_buffers': [None], 'range_num_stages': [0], 'range_unroll_factors': [0], 'range_warp_specializes': [], 'reduction_loops': [None]}, advanced_controls_file=ACF)
# use: helion.kernel(config=CONFIG, static_shapes=True)(fn)
