"""Capture the Triton and Helion kernel calls of a real program, then tune each kernel with no hand-written spec.

``paretotune capture --out DIR -- python my_program.py`` (or ``with paretotune.capture(DIR):``) records every
call of a ``@triton.jit`` / ``@triton.autotune`` / ``@helion.kernel`` / ``@helion.aot_kernel`` kernel: where the
kernel is defined, each argument's metadata, the config it ran with and its GPU time. Each describable kernel
becomes a campaign whose inputs are rebuilt from that metadata (:mod:`.replay`).

Modules, one job each: :mod:`.metadata` (arguments as JSON, tensors rebuilt from it), :mod:`.kernel_info`
(what a kernel object is and where it is defined), :mod:`.recorder` (calls and their time per signature),
:mod:`.tally` (what is kept per kernel and signature, and each kernel's entry in the record),
:mod:`.first_call` (what the first call of a signature did), :mod:`.hooks` (the patches on Triton and Helion
while a capture runs), :mod:`.run_program` (the captured program's process), :mod:`.writer` (the ranked
summary and one campaign per kernel), :mod:`.replay` (a kernel spec from a capture).

The package is named ``capturing`` so that ``paretotune.capturing`` stays the public context manager.
"""

# How a capture times calls on a GPU (:mod:`.recorder`); here so that the command line can name them without
# importing the recorder.
TIMING = ("sampled", "all")
TIME_FIRST = 16  # calls of each kernel read (signature key) and timed before sampling starts
SAMPLE_EVERY = 8  # then each call is read and timed with probability 1 / SAMPLE_EVERY
