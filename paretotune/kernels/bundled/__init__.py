"""Kernels shipped with paretotune, ready to name in a campaign as ``module:attr``.

- ``paretotune.kernels.bundled.softmax:triton_softmax`` (Triton, wide rows held in registers)
- ``paretotune.kernels.bundled.layer_norm:triton_layer_norm`` (Triton, fused forward)
- ``paretotune.kernels.bundled.matmul:triton_matmul`` (Triton, fp16 tiled matmul)
- ``paretotune.kernels.bundled.helion_softmax:helion_softmax`` (Helion)
- ``paretotune.kernels.bundled.helion_rms_norm:helion_rms_norm`` (Helion)
"""
