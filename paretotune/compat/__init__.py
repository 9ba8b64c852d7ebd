"""The one door to other projects' internals: Helion's, Triton's and torch's private names, the functions of
theirs that paretotune swaps at run time, and the source text it reads.

paretotune builds, times and searches kernels the way Helion and Triton do, without a GPU where possible, and that
needs parts of them that are not public API. Those parts change between releases without notice, so they live
here and nowhere else: each behind a small named function whose docstring says which releases it was checked
against, each pinned by a test in ``tests/compat/`` against the installed library, and :func:`helion.check` /
:func:`triton.check` refuse a release outside the tested range in one line. A new Helion or Triton is then a
review of this folder and a run of those tests. This package imports nothing of paretotune but
:mod:`paretotune.errors`.
"""
