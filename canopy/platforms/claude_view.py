"""Claude Code's ``stream-json`` events as a person reads them (``canopy graph logs``), and
the tool call readings its denials share.

An ``assistant`` event's message holds text blocks (the agent's words) and ``tool_use``
blocks (``name``, ``id`` and the tool's ``input``); the next ``user`` event answers each
call with a ``tool_result`` block, ``is_error`` when the call failed or was refused.
Paths in tool inputs are absolute; they read relative to the cwd of the ``system``/
``init`` event. Thinking blocks, the init event, rate-limit notices and the ``result``
show nothing here: the run's end says what it came to
(:meth:`~canopy.platforms.base.Platform.render_end`).
"""

from __future__ import annotations

from typing import Any

from canopy.platforms.base import str_field
from canopy.platforms.history import texts
from canopy.platforms.view import (
    LogContext,
    call_line,
    edit_line,
    failed_line,
    relative,
    text_lines,
)

TARGET_KEYS = ("file_path", "notebook_path", "path", "url", "pattern", "query")
"""The ``input`` keys that name what a tool call works on, in order."""
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
"""Claude Code's tools that write a file."""


def render_event(event: dict[str, Any], seen: LogContext) -> list[str]:
    """The agent's text, each tool call with its target, each failed tool call; the init
    event's cwd is kept for the paths after it."""
    kind = event.get("type")
    if kind == "system" and event.get("subtype") == "init":
        seen.cwd = str_field(event, "cwd")
    if kind == "assistant":
        return [line for block in content_blocks(event) for line in _said(block, seen)]
    if kind == "user":
        return [
            failed_line(seen.tools.get(str(block.get("tool_use_id"))), _result_text(block))
            for block in content_blocks(event)
            if block.get("type") == "tool_result" and block.get("is_error") is True
        ]
    return []


def _said(block: dict[str, Any], seen: LogContext) -> list[str]:
    """One block of the agent's message: its text, or its tool call (remembered by id)."""
    if block.get("type") == "text":
        return text_lines(str_field(block, "text") or "")
    if block.get("type") != "tool_use":
        return []
    name = str_field(block, "name") or "a tool"
    seen.tools[str(block.get("id"))] = name
    arguments = block.get("input")
    target = call_target(arguments, seen.cwd)
    if name in EDIT_TOOLS:
        return [edit_line(name, target)]
    return [call_line(name, command=str_field(arguments, "command"), target=target)]


def _result_text(block: dict[str, Any]) -> str:
    """What a ``tool_result`` block says: its content, a string or text parts."""
    return "\n".join(texts(block.get("content")))


def call_target(arguments: object, cwd: str | None) -> str | None:
    """What a tool call's input says it works on: a file (relative to ``cwd`` when it
    lies under it), a URL, a pattern or a query; ``None`` when it names none."""
    target = next(filter(None, (str_field(arguments, key) for key in TARGET_KEYS)), None)
    return relative(target, cwd) if target is not None else None


def content_blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The dict blocks of an event's ``message.content``."""
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return (
        [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )
