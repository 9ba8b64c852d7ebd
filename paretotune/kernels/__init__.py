"""Kernel adapters (Triton, Helion) and the kernels bundled with paretotune."""
