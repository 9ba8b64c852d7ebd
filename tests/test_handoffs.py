"""Narrow values cross layers (issue 43): below the runner and the commands, no function takes or returns the
whole campaign. Engines, measurers, workers, validation, ship and the readers get small frozen requests (or the
campaign file's path and text, from which a worker re-creates its kernel adapter), made from the campaign by the
runner, the commands and the service.

Checked by AST, so an ``Any``-typed parameter named ``campaign`` counts as much as a ``Campaign`` annotation; a
request that holds the campaign as a field counts too.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "paretotune"
BELOW_RUNNER = ("build", "measure", "cluster", "validate", "ship", "search", "front", "report", "kernels",
                "objectives", "pareto", "store", "toolchain", "ncu")
CAMPAIGN_TYPE = re.compile(r"\bCampaign(Spec)?\b")


def handoffs(source: str, where: str) -> list[str]:
    """Each signature (parameter or return annotation) and class field in ``source`` that carries the campaign:
    a parameter named ``campaign``, or an annotation naming ``Campaign`` / ``CampaignSpec``."""
    found = []

    def names_campaign(annotation: ast.expr | None) -> bool:
        return annotation is not None and bool(CAMPAIGN_TYPE.search(ast.unparse(annotation)))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            name = getattr(node, "name", "<lambda>")
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]:
                if arg.arg == "campaign" or names_campaign(arg.annotation):
                    found.append(f"{where}:{node.lineno} {name}({arg.arg})")
            if not isinstance(node, ast.Lambda) and names_campaign(node.returns):
                found.append(f"{where}:{node.lineno} {name} -> {ast.unparse(node.returns)}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and names_campaign(item.annotation):
                    found.append(f"{where}:{item.lineno} {node.name}.{ast.unparse(item.target)}")
    return found


def test_no_signature_below_the_runner_carries_the_campaign() -> None:
    found = []
    for package in BELOW_RUNNER:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += handoffs(path.read_text(), str(path.relative_to(ROOT.parent)))
    assert not found, "the campaign crosses into a lower layer (give it a request instead):\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    "def f(campaign): ...",
    "def f(campaign: Any) -> None: ...",
    "def f(c: Campaign) -> None: ...",
    "def f(spec: 'CampaignSpec') -> None: ...",
    "def f() -> tuple[Campaign, Any]: ...",
    "class A:\n    def m(self, *, campaign=None): ...",
    "@dataclass(frozen=True)\nclass Request:\n    campaign: Campaign",
    "g = lambda campaign: campaign.shapes",
])
def test_the_check_finds_each_form_of_handoff(source: str) -> None:
    assert handoffs(source, "x.py")


@pytest.mark.parametrize("source", [
    "def f(campaign_path: str, campaign_text: str, campaign_seed: int) -> None: ...",
    "def f(request: MeasureRequest, shapes: tuple[Shape, ...]) -> CampaignLike: ...",
])
def test_the_check_lets_narrow_values_pass(source: str) -> None:
    assert handoffs(source, "x.py") == []
