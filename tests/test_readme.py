"""The README teaches in its first screens and keeps the record elsewhere: its length before the reference
section, what a run needs stated before the commands, the commands CI runs, and user-facing docs free of
issue numbers and commit hashes (the project's history lives in git and benchmarks/results/)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (output blocks show ACF file names, which are content hashes)."""
    return "".join(part for i, part in enumerate(text.split("```")) if i % 2 == 0)


def test_readme_teaches_in_about_150_lines_before_its_reference() -> None:
    head = README[:README.index("\n## Reference\n")]
    assert len(head.splitlines()) <= 160
    sections = re.findall(r"^## (.+)$", head, flags=re.M)
    assert sections == ["Quick start", "Your own kernel", "Your program's kernels: `capture`, then `run`",
                        "Shipping the result", "Measured on an H200 and an H100"]
    assert "](docs/img/quickstart-front.png)" in head and "](docs/results.md)" in head


def test_what_a_run_needs_comes_before_the_commands() -> None:
    """Offline, a newcomer learns about the search space before installing, not after."""
    first_command = README.index("pip install torch==2.13.0 && pip install -e . && paretotune run")
    needs = README[README.index("## Quick start"):first_command]
    assert "ptxas 13.3 search space" in needs and "downloads on first use" in needs
    assert "CIQ_SEARCH_SPACES_DIR" in needs


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in README


def test_user_facing_docs_name_no_issue_numbers_and_no_commit_hashes() -> None:
    for path in USER_DOCS:
        prose = _prose(path.read_text())
        assert not re.search(r"#\d+\b|\bissues? \d+", prose), path
        assert not COMMIT.search(prose), (path, COMMIT.search(prose))


def test_the_full_record_is_linked_and_every_linked_doc_exists() -> None:
    for path in USER_DOCS:
        prose = re.sub(r"`[^`\n]*`", "", _prose(path.read_text()))
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):
            assert (path.parent / target).exists(), (path, target)
