"""Kernels shipped with paretotune, ready to name in a campaign (``paretotune.kernels.bundled.softmax:triton_softmax``)."""
