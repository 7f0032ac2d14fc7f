"""Session transcripts: one JSON line per delivered (or failed) turn.

Appended by the delivery activity after each turn, whether or not anyone is watching;
``canopy session list`` shows where each session's transcript lives. Appending is
idempotent per message: turns are delivered one at a time, so a retried delivery can
only duplicate the last line, and that is checked first.
"""

import json
from pathlib import Path
from typing import Any

_TAIL_BYTES = 1 << 20


def append_turn(path: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` (which carries ``message_id``) unless it is already the last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    last = last_turn(path)
    if last is not None and last.get("message_id") == entry["message_id"]:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")


def last_turn(path: Path) -> dict[str, Any] | None:
    """The transcript's last entry, reading only the end of the file."""
    if not path.exists():
        return None
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - _TAIL_BYTES))
        lines = handle.read().splitlines()
    for line in reversed(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def read_turns(path: Path) -> list[dict[str, Any]]:
    """Every entry of a transcript, oldest first (``[]`` before the first turn)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
