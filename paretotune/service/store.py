"""The queue on disk: ``<workdir>/campaigns/<id>/{campaign.yaml,state.json,log.txt,run/}``.

``state.json`` is replaced atomically (write + rename), so a server killed at any moment leaves each campaign
in its old state or its new one, never a torn file. Queue order is ``seq``, given at submission.
"""
from __future__ import annotations

import json
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from paretotune.store.atomic import atomic_write_json

Status = Literal["queued", "running", "done", "failed", "cancelled"]
FINAL: frozenset[str] = frozenset({"done", "failed", "cancelled"})
ID_RE = re.compile(r"^[0-9]{6}-[0-9a-f]{8}$")


@dataclass
class CampaignState:
    id: str
    seq: int
    name: str
    kind: Literal["static", "gpu"]
    status: Status = "queued"
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    pid: int | None = None  # also the process group id (the child starts its own session)
    slot: str | None = None  # GPU id or "cpu<N>"
    attempts: int = 0  # processes started for it: more than one means it was resumed
    returncode: int | None = None
    error: str | None = None
    cancel_requested: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class CampaignStore:
    """Reads and writes campaign folders; one server process owns a work directory at a time."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir).resolve()
        self.root = self.workdir / "campaigns"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._cache: dict[str, CampaignState] = {}
        for path in sorted(self.root.iterdir()):
            state = self._read(path / "state.json")
            if state is not None:
                self._cache[state.id] = state

    def folder(self, cid: str) -> Path:
        if not ID_RE.match(cid):
            raise KeyError(cid)
        return self.root / cid

    def run_dir(self, cid: str) -> Path:
        return self.folder(cid) / "run"

    def new(self, name: str, kind: Literal["static", "gpu"], text: str) -> CampaignState:
        with self._lock:
            seq = max((s.seq for s in self._cache.values()), default=0) + 1
            cid = f"{seq:06d}-{secrets.token_hex(4)}"
            folder = self.root / cid
            folder.mkdir()
            (folder / "campaign.yaml").write_text(text, encoding="utf-8")
            state = CampaignState(id=cid, seq=seq, name=name, kind=kind)
            self._write(state)
            return state

    def get(self, cid: str) -> CampaignState | None:
        return self._cache.get(cid) if ID_RE.match(cid) else None

    def all(self) -> list[CampaignState]:
        with self._lock:
            states = list(self._cache.values())
        return sorted(states, key=lambda s: s.seq)

    def save(self, state: CampaignState) -> None:
        with self._lock:
            self._write(state)

    def _write(self, state: CampaignState) -> None:
        folder = self.root / state.id
        atomic_write_json(folder / "state.json", state.to_json(), indent=2)
        self._cache[state.id] = state

    @staticmethod
    def _read(path: Path) -> CampaignState | None:
        try:
            return CampaignState(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # a folder without a complete state.json was never acknowledged to a client
