# Pinned by paretotune: validated speedup vs the default build (m4k_n16k: 1.055x).
# ACF: +5.6 % over the same config without it.
# Kernel spec: ../../.workloads/helion-pretuned-sm90/softmax/softmax.py:softmax. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and
# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.
from pathlib import Path

ACF = str(Path(__file__).with_name("cand4_2cde7dddea48.acf"))
import helion

CONFIG = helion.Config(**{'atomic_indexing': [], 'block_sizes': [1], 'indexing': ['pointer', 'tensor_descriptor', 'tensor_descriptor', 'pointer', 'tensor_descriptor', 'pointer'], 'load_eviction_policies': ['first', 'first', 'first', ''], 'num_stages': 2, 'num_warps': 16, 'pid_type': 'flat', 'range_flattens': [None], 'range_multi_buffers': [None], 'range_num_stages': [0], 'range_unroll_factors': [0], 'range_warp_specializes': [], 'reduction_loops': [None]}, advanced_controls_file=ACF)
# use: helion.kernel(config=CONFIG, static_shapes=True)(fn)
