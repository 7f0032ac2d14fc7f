"""The Anthropic Messages API as Claude Code (2.1.332) uses it, answered from a script.

What the real CLI does against it, as found with this server (``tests/test_real_claude.py``
checks each point that Canopy relies on):

- ``ANTHROPIC_BASE_URL`` points it here; ``ANTHROPIC_API_KEY`` (``x-api-key`` header) takes
  the API-key path, ``CLAUDE_CODE_OAUTH_TOKEN`` (``Authorization: Bearer``, beta
  ``oauth-2025-04-20``) the subscription path. With the quiet variables of
  :data:`~tests.model_server.clis.QUIET` nothing else is fetched: no profile, no quota
  probe, no title; every request is a ``POST /v1/messages?beta=true`` of the agent's loop,
  streamed (``stream: true``), carrying the tools. Anything without tools is answered
  with a short text and takes no turn, and other paths get a 404, so a CLI that starts
  making side requests cannot eat the script.
- The first request's ``system`` role message names ``Primary working directory: <cwd>``;
  the ``Write`` tool wants an absolute ``file_path``, so :class:`~.core.WriteFile`'s path is
  resolved against it. ``Bash`` takes ``{"command", "description"}``.
- Effort travels as ``output_config.effort``; the model is the CLI's default unless
  ``--model`` names one (the answer's ``model`` is taken as given).
- Limits: the subscription 429 (``anthropic-ratelimit-unified-status: rejected`` and its
  reset epoch) is not retried: the CLI prints a ``rate_limit_event`` (status
  ``rejected``, ``resetsAt``), a synthetic ``rate_limit`` message ``You've hit your 5-hour
  limit · resets 10:41pm (UTC)`` and an error result, exit 1. The API-key 429
  (``rate_limit_error``, ``retry-after``) is retried up to ``CLAUDE_CODE_MAX_RETRIES``
  times (default 10, about 3 minutes), each announced by a ``system``/``api_retry`` event,
  then reported as ``API Error: Request rejected (429) · This request would exceed your
  account's rate limit. Please try again later.`` (exit 1). 5xx and 529 are retried the
  same way (``error`` ``server_error`` / ``overloaded``), and so is a refused connection
  (``error_status`` null, ``error`` ``unknown``), which ends ``API Error: Connection
  refused …``.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.model_server.clis import isolated_home
from tests.model_server.core import (
    Action,
    Limit,
    ModelServer,
    Request,
    Response,
    Say,
    Vendor,
    WriteFile,
    strings,
)

MODEL = "claude-sonnet-4-5"
API_KEY = "sk-ant-canopy-test"
_WORKDIR = re.compile(r"Primary working directory: ([^\n]+)")
_RATE_LIMITED = "This request would exceed your account's rate limit. Please try again later."
_ids = itertools.count(1)
SSE = tuple[tuple[str | None, Any], ...]


class AnthropicAPI(Vendor):
    """``POST /v1/messages`` streamed as server-sent events, one scripted turn each."""

    name = "anthropic"

    def answer(self, request: Request) -> Response:
        """A turn for each agent request; side requests answered without taking one."""
        if request.method != "POST":
            return Response(200, {})
        if not request.path.startswith("/v1/messages") or not isinstance(request.body, dict):
            return Response(404, _error("not_found_error", f"no route {request.path}"))
        if request.path.startswith("/v1/messages/count_tokens"):
            return Response(200, {"input_tokens": 1})
        if not request.body.get("tools"):
            return _message([_text("Canopy test")], "end_turn")
        turn = self.script.next_turn()
        if isinstance(turn, Limit):
            return _limit(turn)
        if isinstance(turn, Say):
            return _message([_text(turn.text)], "end_turn")
        workdir = _workdir(request.body)
        return _message([_tool_use(action, workdir) for action in turn], "tool_use")


def cli_env(server: ModelServer, home: Path, *, subscription: bool = False) -> dict[str, str]:
    """Claude Code's environment against ``server``: an isolated home, the server's URL and
    an API key, or an OAuth token for the subscription path (where the CLI reads the
    unified rate-limit headers)."""
    credential = "CLAUDE_CODE_OAUTH_TOKEN" if subscription else "ANTHROPIC_API_KEY"
    return {**isolated_home(home), "ANTHROPIC_BASE_URL": server.base_url, credential: API_KEY}


def _workdir(body: dict[str, Any]) -> Path:
    """The cwd Claude Code names in the request (its file tools want absolute paths)."""
    found = next(filter(None, map(_WORKDIR.search, strings(body))), None)
    if found is None:
        raise ValueError("the request names no primary working directory")
    return Path(found[1].strip())


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_use(action: Action, workdir: Path) -> dict[str, Any]:
    """``Write`` (absolute path) for a file, ``Bash`` (one shell-quoted line) for a program."""
    if isinstance(action, WriteFile):
        name, arguments = "Write", {"file_path": str(workdir / action.path), "content": action.text}
    else:
        name, arguments = "Bash", {"command": shlex.join(action.argv), "description": "Run it"}
    return {"type": "tool_use", "id": f"toolu_{next(_ids):020d}", "name": name, "input": arguments}


def _message(blocks: list[dict[str, Any]], stop_reason: str) -> Response:
    """One streamed assistant message: its start, each block, the stop reason, the end."""
    start: dict[str, Any] = {
        "id": f"msg_{next(_ids):024d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    events: SSE = (
        ("message_start", {"type": "message_start", "message": start}),
        *(event for index, block in enumerate(blocks) for event in _block(index, block)),
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    )
    return Response(200, sse=events)


def _block(index: int, block: dict[str, Any]) -> SSE:
    """A content block streamed whole: text as one ``text_delta``, a tool call's input as
    one ``input_json_delta``."""
    if block["type"] == "text":
        empty, delta = _text(""), {"type": "text_delta", "text": block["text"]}
    else:
        empty = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return (
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": empty},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    )


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _limit(limit: Limit) -> Response:
    """The 429 the real API sends: on a subscription with the unified headers (rejected,
    the window's reset epoch), on an API key with ``retry-after`` and the request limits."""
    now = time.time()
    ahead = limit.reset_seconds or 0
    if limit.kind == "subscription":
        reset = str(int(now + ahead))
        headers: tuple[tuple[str, str], ...] = (
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", reset),
            ("anthropic-ratelimit-unified-representative-claim", "five_hour"),
            ("anthropic-ratelimit-unified-5h-status", "rejected"),
            ("anthropic-ratelimit-unified-5h-reset", reset),
            ("anthropic-ratelimit-unified-5h-utilization", "1.0"),
            ("anthropic-ratelimit-unified-overage-status", "rejected"),
            ("anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled"),
        )
    elif limit.kind == "api_rate":
        refill = datetime.fromtimestamp(now + ahead, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        headers = (
            ("retry-after", str(ahead)),
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", refill),
        )
    else:
        raise ValueError(f"the Anthropic API has no {limit.kind} limit")
    return Response(429, _error("rate_limit_error", _RATE_LIMITED), headers=headers)
