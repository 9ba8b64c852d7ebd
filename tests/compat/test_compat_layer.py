"""``paretotune/compat/`` is the lowest layer above the base values: it imports nothing of paretotune but
:mod:`paretotune.errors` and its own modules (at module level or inside functions), so any layer may use it."""
from __future__ import annotations

import ast
from pathlib import Path

COMPAT = Path(__file__).resolve().parents[2] / "paretotune" / "compat"
ALLOWED = ("paretotune.errors", "paretotune.compat")


def _paretotune_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "paretotune"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                out.append("." * node.level + (node.module or ""))
            elif (node.module or "").split(".")[0] == "paretotune":
                out.append(node.module or "")
    return out


def test_compat_imports_only_errors_and_itself() -> None:
    found = {p.name: [m for m in _paretotune_imports(p) if not m.startswith(ALLOWED)] for p in COMPAT.glob("*.py")}
    assert found and not {name: bad for name, bad in found.items() if bad}
