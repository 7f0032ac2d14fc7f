"""Gemini CLI's ``stream-json`` events as a person reads them (``canopy graph logs``), and
the tool call readings its denials share.

The agent's text streams as assistant ``message`` events with ``delta: true``, pieces of
lines, so it is shown line by line as the lines end, and the rest when the message ends
(at the next event that is not such a piece). A ``tool_use`` event names the tool
(``tool_name``, ``tool_id``) and its ``parameters``; the ``tool_result`` event with the
same ``tool_id`` says whether it worked (``status`` and ``error``). The prompt (the user
``message``), the ``init`` event and the ``result`` show nothing here: the run's end says
what it came to (:meth:`~canopy.platforms.base.Platform.render_end`).
"""

from __future__ import annotations

from typing import Any

from canopy.platforms.base import str_field
from canopy.platforms.view import (
    LogContext,
    call_line,
    edit_line,
    failed_line,
    relative,
    text_lines,
)

TARGET_KEYS = ("file_path", "dir_path", "path", "pattern")
"""The ``parameters`` keys that name what a tool call works on, in order."""
EDIT_TOOLS = ("write_file", "replace")
"""Gemini CLI's tools that write a file."""


def render_event(event: dict[str, Any], seen: LogContext) -> list[str]:
    """The agent's text as its lines end, each tool call with its target, each failed
    tool call; any other event ends the text streamed before it."""
    kind = event.get("type")
    if kind == "message" and event.get("role") == "assistant" and event.get("delta") is True:
        seen.text += str_field(event, "content") or ""
        ended, newline, seen.text = seen.text.rpartition("\n")
        return text_lines(ended + newline)
    shown = seen.flush()
    if kind == "message" and event.get("role") == "assistant":
        shown += text_lines(str_field(event, "content") or "")
    elif kind == "tool_use":
        shown += _call(event, seen)
    elif kind == "tool_result" and event.get("status") == "error":
        said = str_field(event.get("error"), "message") or str_field(event, "output") or ""
        shown.append(failed_line(seen.tools.get(str(event.get("tool_id"))), said))
    return shown


def _call(event: dict[str, Any], seen: LogContext) -> list[str]:
    """One tool call, remembered by its id for its result."""
    name = str_field(event, "tool_name") or "a tool"
    seen.tools[str(event.get("tool_id"))] = name
    arguments = event.get("parameters")
    target = call_target(arguments)
    shown = relative(target, seen.cwd) if target is not None else None
    if name in EDIT_TOOLS:
        return [edit_line(name, shown)]
    return [call_line(name, command=str_field(arguments, "command"), target=shown)]


def call_target(arguments: object) -> str | None:
    """What a tool call's parameters say it works on (a file, a directory, a pattern)."""
    return next(filter(None, (str_field(arguments, key) for key in TARGET_KEYS)), None)
