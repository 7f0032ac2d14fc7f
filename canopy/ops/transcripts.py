"""A session with the latest turns of its transcript: ``session get --transcript``, the
MCP ``session get`` with ``transcript``, and the TUI's session page.

The session is read from the store; the turns come from the session's transcript file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from canopy.sessions.transcripts import read_turns
from canopy.store import queries

if TYPE_CHECKING:
    from canopy.store.engine import Store

TRANSCRIPT_TURNS = 50
"""How many of a session's latest turns :func:`session_transcript` returns."""


def session_transcript(store: Store, ref: str, last: int = TRANSCRIPT_TURNS) -> dict[str, Any]:
    """One session, live or finished, with the ``last`` turns of its transcript, oldest
    first (what was sent, from where, and what the harness replied) and how many turns
    it has in all."""
    with store.transaction() as rows:
        found = queries.find_session(rows, ref, live_only=False)
    turns = read_turns(Path(found["transcript_path"])) if found["transcript_path"] else []
    return {**found, "turns": turns[-last:], "turns_total": len(turns)}
