"""Reading a harness's own on-disk conversation history: the pieces every adapter shares.

Each harness keeps its conversations in its own place and shape (see the adapters and
``docs/platforms.md``), but the chores are the same: find the harness's home (an
environment variable or a directory under the user's home), read JSON or JSON-lines
files that may be half-written, corrupt or unreadable without ever raising, turn ISO
timestamps into aware UTC datetimes, cut a title from the first prompt, compare working
directories by their resolved paths, and order the result most recently updated first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from canopy.platforms.base import HarnessConversation, first_line, json_event

TITLE_LIMIT = 100
_OLDEST = datetime.min.replace(tzinfo=UTC)


def env_dir(variable: str) -> Path | None:
    """``$variable`` as a path when it is set and non-empty (the harnesses ignore ``""``)."""
    value = os.environ.get(variable)
    return Path(value) if value else None


def user_home() -> Path | None:
    """The user's home directory, or ``None`` on a machine that has none."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def harness_home(variable: str, default: str) -> Path | None:
    """``$variable`` if set, else ``~/<default>``: how Claude Code and Codex find their home."""
    explicit = env_dir(variable)
    if explicit is not None:
        return explicit
    home = user_home()
    return home / default if home is not None else None


def list_dir(folder: Path) -> list[Path]:
    """The entries of ``folder``, sorted; empty when it is missing or unreadable."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def read_text(path: Path) -> str | None:
    """The whole file as text (undecodable bytes replaced), ``None`` when unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_json(path: Path) -> Any:
    """The JSON value of a whole file, ``None`` when unreadable or not JSON."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, lazily, so a reader can stop at the head.

    A harness appends while it runs, so the last line may be half-written; corrupt lines
    are skipped, and a file that cannot be read (or stops being readable) just ends.
    """
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                event = json_event(line)
                if event is not None:
                    yield event
    except OSError:
        return


def parse_timestamp(value: object) -> datetime | None:
    """An ISO 8601 timestamp (``…Z`` or with an offset) as aware UTC; naive means UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def modified_at(path: Path) -> datetime | None:
    """The file's modification time as aware UTC: the last append, for append-only logs."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, OverflowError, ValueError):
        return None


def title_of(prompt: str) -> str:
    """A conversation's title: the prompt's first non-blank line, cut to ~100 characters."""
    return first_line(prompt, TITLE_LIMIT)


def texts(content: object) -> list[str]:
    """The text pieces of a message's content, in order, whatever the harness's shape.

    Content is a plain string, one part (``{"text": …}``) or a list of strings and parts
    (``{"type": "text" | "input_text" | …, "text": …}``); parts without text (tool
    results, images, function responses) contribute nothing.
    """
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        text = content.get("text")
        return [text] if isinstance(text, str) else []
    if isinstance(content, list):
        return [piece for part in content for piece in texts(part)]
    return []


def resolved(path: str | Path) -> Path:
    """``path`` made absolute with symlinks resolved, without requiring it to exist."""
    candidate = Path(path).expanduser()
    try:
        return candidate.resolve()
    except (OSError, RuntimeError):
        return candidate.absolute()


def is_workdir(cwd: object, workdir: Path) -> bool:
    """Whether a recorded cwd is ``workdir`` (already resolved), comparing resolved paths."""
    return isinstance(cwd, str) and bool(cwd) and resolved(cwd) == workdir


def newest_first(conversations: Iterable[HarnessConversation | None]) -> list[HarnessConversation]:
    """One entry per conversation id (the latest copy wins), most recently updated first.

    A harness can hold one conversation twice (Gemini CLI keeps a migrated legacy file next
    to its successor); the copy updated last is the one the harness would resume.
    """
    latest: dict[str, HarnessConversation] = {}
    for conversation in conversations:
        if conversation is None:
            continue
        known = latest.get(conversation.conversation_id)
        if known is None or _recency(conversation) > _recency(known):
            latest[conversation.conversation_id] = conversation
    return sorted(latest.values(), key=_recency, reverse=True)


def _recency(conversation: HarnessConversation) -> tuple[datetime, datetime, str]:
    """Sort key: last update, then start, then id, so equal times still order stably."""
    updated = conversation.updated_at or _OLDEST
    started = conversation.started_at or _OLDEST
    return updated, started, conversation.conversation_id
