"""The ACF dimension of a search that takes ACFs as a list (Helion's ``autotune_search_acf``): which ACFs, and the
file names Helion knows them by.

Helion's ConfigGeneration turns a list of ACF files into one categorical ``advanced_controls_file`` fragment
(``""``: ptxas defaults); its mutations, neighbourhoods and surrogate then treat the ACF like any other knob.
What goes into the list, per ACF kind of the campaign:

- ``generated``: ``per_round`` samples of CompileIQ's PTXAS space per search round (CompileIQ's sampler: its
  proposals for that space). A round is one run of Helion's search; the next round's list keeps the ACFs that
  did best so far (up to half the list, by the search's number, see :mod:`paretotune.search.scalarize`) and
  refills the rest with new samples, so the ACF layer keeps exploring while what it found stays searchable.
  CompileIQ's sampler takes no seed: the lists are saved with the engine, so a resumed search replays the same.
- ``finite``: the campaign's list, the same in every round (its option 0, no ACF, is ``""``).
- ``none``: no ACF dimension.

Helion only compares the names, never reads the files (paretotune builds each candidate with the ACF it stores
itself), but the names are real files holding the bytes, named by content: ``<tmp>/paretotune-acfs-<uid>/<sha256>.acf``.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paretotune.search.space import SearchSpace
from paretotune.store.atomic import atomic_write


def sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def label_dir() -> Path:
    """Where the named ACF files live (per user: several users may share a machine)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"paretotune-acfs-{uid}"


def label(data: bytes | None) -> str:
    """Helion's name for an ACF: ``""`` for none, else the path of a file holding it (written if missing)."""
    if data is None:
        return ""
    folder = label_dir()
    path = folder / f"{sha(data)}.acf"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    return str(path)


class AcfLists:
    """The ACF list of each search round (see the module docstring); ``None`` in a list is "no ACF"."""

    def __init__(self, space: SearchSpace, per_round: int) -> None:
        self.kind = space.acf
        self.per_round = per_round
        self._space = space
        self._sampler: Any = None

    @property
    def searched(self) -> bool:
        """Whether the search has an ACF dimension at all."""
        return self.kind == "generated" or (self.kind == "finite" and len(self._space.acf_options) > 1)

    def for_round(self, best_first: Sequence[bytes]) -> list[bytes | None]:
        """The next round's list: no-ACF first (Helion's default value of the fragment is its first choice), then
        for generated ACFs the best ones so far (``best_first``, at most half) and fresh CompileIQ samples."""
        if self.kind == "finite":
            return [o.data for o in self._space.acf_options]
        if self.kind != "generated":
            return [None]
        kept: list[bytes] = []
        for data in best_first:
            if data not in kept and len(kept) < self.per_round // 2:
                kept.append(data)
        fresh = [d for d in self.draw(self.per_round - len(kept)) if d not in kept]
        return [None, *kept, *fresh]

    def draw(self, n: int) -> list[bytes]:
        """``n`` samples of CompileIQ's PTXAS space (unseeded: CompileIQ's sampler takes no seed)."""
        if n <= 0:
            return []
        if self._sampler is None:
            from compileiq.ciq import Search
            from compileiq.types import SearchConfiguration, WorkerTypes

            from paretotune.search.compileiq_engine import _ptxas_space

            self._sampler = Search(objective_function=lambda _c: 0.0,
                                   search_space=_ptxas_space(self._space.ptxas_version),
                                   search_config=SearchConfiguration(problem_type="min", pool_size=max(n, 6),
                                                                     generations=1),
                                   worker_type=WorkerTypes.MANUAL)
        return [bytes.fromhex(h) for h in self._sampler.sample(n)]
