"""The repository reads on its own: no code, test or doc points a reader at a document it
does not have (a design note kept elsewhere, an issue tracker's numbers). What a decision
says and why lives in ``docs/architecture.md``."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ELSEWHERE = re.compile("|".join([r"\bDESIGN\b", r"\b[Ii]ssues? #?\d+\b", r"[(]issue\b"]))
"""A design document outside the repository, or an issue by its number."""


def test_nothing_refers_to_a_document_outside_the_repository() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.toml", "Makefile", "Dockerfile", "*.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in tracked
        for number, line in enumerate((ROOT / name).read_text().splitlines(), start=1)
        if ELSEWHERE.search(line) and "/issues/" not in line and "sdk-python#" not in line
    ]
    assert found == [], "\n".join(found)
