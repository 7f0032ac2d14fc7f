"""What the docs quote as output, read from the docs themselves, so a test compares the
real output with the text a user reads rather than with a copy that can drift from it."""

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def quoted(doc: str, starts: str) -> str:
    """The quote in ``docs/<doc>`` that begins with ``starts`` (an ``error: `` prefix
    aside): a line of a code block, or an inline code span, whose line wrapping is undone."""
    text = (DOCS / doc).read_text()
    fences = re.compile(r"^```.*?^```$", re.M | re.S)
    lines = [line for block in fences.findall(text) for line in block.splitlines()]
    prose = re.sub(r"\n\s*", " ", fences.sub("", text))
    spans: list[str] = [
        found[1] or found[2] for found in re.finditer(r"``\s?(.+?)\s?``|`([^`]+)`", prose)
    ]
    for candidate in (str(line).removeprefix("error: ") for line in [*lines, *spans]):
        if candidate.startswith(starts):
            return candidate
    raise AssertionError(f"docs/{doc} quotes nothing that starts with {starts!r}")


def shape(quote: str) -> re.Pattern[str]:
    """A pattern matching what ``quote`` stands for: ``…`` is any text, every digit any
    digit (ids, times and ports differ from run to run), everything else as written."""
    parts = [re.escape(part) for part in quote.split("…")]
    return re.compile(".+".join(re.sub(r"\d", r"\\d", part) for part in parts))
