"""Codex's ``exec --json`` events as a person reads them (``canopy graph logs``).

The turn's work comes as items, each announced by ``item.started`` (when Codex shows its
start) and ended by ``item.completed``: ``agent_message`` (the agent's text),
``command_execution`` (``command``, ``exit_code``, ``aggregated_output``, ``status``),
``file_change`` (``changes``: ``path`` and ``kind`` add, update or delete),
``mcp_tool_call`` (``server``, ``tool``), ``web_search`` (``query``), ``reasoning`` and
``todo_list`` (not shown), and ``error`` (a warning: the turn goes on). A tool call is
shown when it starts, or when it ends if Codex never showed its start; a failed one again
when it ends. A command is shown as the agent wrote it, without the ``bash -lc`` Codex
wraps it in. Paths read relative to the run's workdir.
"""

from __future__ import annotations

import shlex
from pathlib import PurePath
from typing import Any

from canopy.platforms.base import str_field
from canopy.platforms.view import (
    WARNING,
    LogContext,
    call_line,
    edit_line,
    failed_line,
    marked,
    relative,
    text_lines,
)

_SHELLS = ("bash", "sh", "zsh")
_FAILED = ("failed", "declined")
"""The ``status`` of an item that did not do its work."""


def render_event(event: dict[str, Any], seen: LogContext) -> list[str]:
    """An item as it starts or ends; every other event (thread and turn bookkeeping)
    shows nothing."""
    item = event.get("item")
    if not isinstance(item, dict) or event.get("type") not in ("item.started", "item.completed"):
        return []
    kind, item_id = item.get("type"), str(item.get("id"))
    if event["type"] == "item.started":
        shown = _call(item, seen)
        if shown:
            seen.tools[item_id] = str(kind)
        return shown
    if kind == "agent_message":
        return text_lines(str_field(item, "text") or "")
    if kind == "error":
        return marked(WARNING, str_field(item, "message") or "")
    started = item_id in seen.tools
    return [*([] if started else _call(item, seen)), *_failure(item)]


def _call(item: dict[str, Any], seen: LogContext) -> list[str]:
    """The tool call an item is, one line per file a change touches; none for an item
    that is not a tool call."""
    kind = item.get("type")
    if kind == "command_execution":
        return [call_line("command", command=_command(str_field(item, "command") or ""))]
    if kind == "file_change":
        changes = item.get("changes")
        return [
            edit_line(str_field(change, "kind") or "change", _path(change, seen))
            for change in (changes if isinstance(changes, list) else [])
        ]
    if kind == "mcp_tool_call":
        name = ".".join(filter(None, (str_field(item, "server"), str_field(item, "tool"))))
        return [call_line(name or "mcp tool")]
    if kind == "web_search":
        return [call_line("web search", target=str_field(item, "query"))]
    return []


def _failure(item: dict[str, Any]) -> list[str]:
    """A tool call that ended without doing its work: a command's non-zero exit (with
    the first line it printed), a change or MCP call that failed or was declined."""
    code = item.get("exit_code")
    said = str_field(item, "aggregated_output") or ""
    if item.get("type") == "command_execution" and isinstance(code, int) and code != 0:
        return [failed_line(f"exit code {code}", said)]
    if item.get("status") not in _FAILED:
        return []
    error = item.get("error")
    reason = str_field(error, "message") or said or str(item.get("status"))
    return [failed_line(str(item.get("type")), reason)]


def _path(change: object, seen: LogContext) -> str | None:
    """A changed file's path, relative to the run's workdir when it lies under it."""
    path = str_field(change, "path")
    return relative(path, seen.cwd) if path is not None else None


def _command(command: str) -> str:
    """The command as the agent wrote it: ``bash -lc "make test"`` reads ``make test``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    wrapped = len(words) == 3 and PurePath(words[0]).name in _SHELLS and words[1] in ("-lc", "-c")
    return words[2] if wrapped else command
