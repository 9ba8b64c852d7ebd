"""The commands' tests read run directories built by the pareto tests' builders."""
from __future__ import annotations

from pareto.conftest import two_shape_columns  # noqa: F401 - a fixture, shared with tests/pareto
