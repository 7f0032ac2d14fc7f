"""OpenAI's Responses API as Codex CLI (0.171.0) uses it, answered from a script.

What the real CLI does against it, as found with this server (``tests/test_real_codex.py``
checks each point that Canopy relies on):

- ``$CODEX_HOME/config.toml`` names a ``model_provider`` whose ``base_url`` is this server,
  ``wire_api = "responses"`` and ``env_key`` the variable holding the API key (sent as
  ``Authorization: Bearer``). Every request is then a streamed (``stream: true``) ``POST
  /v1/responses``; its ``x-codex-turn-metadata`` header says ``"request_kind": "turn"``
  for the agent's own work. Nothing else is fetched from the provider: no model list, no
  title. ``[analytics] enabled = false`` stops the metrics export to ``ab.chatgpt.com``,
  which otherwise holds every exit for a 5-second DNS timeout.
- The answer is server-sent events: ``response.created``, one ``response.output_item.done``
  per output item, ``response.completed`` with ``usage``. Codex runs the tool calls among
  the items in order and sends their outputs in its next request.
- Tools depend on the model. The default model (``gpt-6.2-sol``, like every model the
  bundled catalog marks ``tool_mode = "code_mode_only"``) gets one freeform tool, ``exec``,
  in an ``additional_tools`` input item: the model writes JavaScript that calls the real
  tools, ``await tools.apply_patch(PATCH)`` and ``await tools.exec_command({cmd})``, and is
  answered with a ``custom_tool_call``. ``gpt-5.5`` (in the catalog without code mode) gets
  them as top-level tools: ``apply_patch`` (freeform, answered with a ``custom_tool_call``)
  and ``exec_command`` (a function, ``{"cmd": "..."}``). Both end in the same patch and
  command runners, sandbox and approval checks; this server answers whichever the request
  offers, one call per action.
- Limits: the ChatGPT plan's 429 (``usage_limit_reached`` with ``resets_at`` epoch seconds,
  ``resets_in_seconds`` and ``plan_type``, plus the ``x-codex-primary-*`` headers) is not
  retried: ``You've hit your usage limit. … try again at 10:41 PM.`` as an ``error`` and a
  ``turn.failed`` event, exit 1. An API key's 429 (``rate_limit_exceeded``, ``retry-after``)
  is retried five times, each announced as an ``error`` event ``Reconnecting... 1/5
  (exceeded retry limit, last status: 429 Too Many Requests)``, then fails with ``exceeded
  retry limit, last status: 429 Too Many Requests`` (exit 1).
"""

from __future__ import annotations

import itertools
import json
import shlex
import time
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
)

API_KEY = "sk-canopy-test"
PROVIDER = "scripted"
_ids = itertools.count(1)
_RATE_LIMITED = (
    "Rate limit reached for gpt-5.5 in organization org-canopy on tokens per min (TPM): "
    "Limit 30000, Used 30000, Requested 1200. Please try again in {seconds}s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more."
)


class OpenAIResponsesAPI(Vendor):
    """``POST /v1/responses`` streamed as server-sent events, one scripted turn each."""

    name = "openai"

    def answer(self, request: Request) -> Response:
        """A turn for each of the agent's requests; anything else takes none."""
        if request.method != "POST" or not request.path.endswith("/responses"):
            return Response(404, _error("not_found", f"no route {request.path}"))
        if not isinstance(request.body, dict) or _request_kind(request) != "turn":
            return _stream([_message("Canopy test")])
        turn = self.script.next_turn()
        if isinstance(turn, Limit):
            return _limit(turn)
        if isinstance(turn, Say):
            return _stream([_message(turn.text)])
        code_mode = "exec_command" not in _top_level_tools(request.body)
        return _stream([_call(action, code_mode) for action in turn])


def cli_env(server: ModelServer, home: Path) -> dict[str, str]:
    """The environment that points Codex at ``server``: an isolated home whose
    ``config.toml`` makes this server the model provider, and the API key it reads.

    ``TMPDIR`` is a directory of the home's own, as a user's ``~/.codex`` is outside the temp
    dir: Codex links its sandbox helper (``codex-linux-sandbox``) under ``$CODEX_HOME`` only
    then, and a system bubblewrap (Debian 12's 0.8) cannot start the sandbox without it.
    """
    env = isolated_home(home)
    temp = home / "tmp"
    temp.mkdir(exist_ok=True)
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.write_text(
        f'model_provider = "{PROVIDER}"\n\n'
        f"[model_providers.{PROVIDER}]\n"
        f'name = "{PROVIDER}"\n'
        f'base_url = "{server.base_url}/v1"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n\n'
        "[analytics]\n"
        "enabled = false\n"
    )
    return {**env, "OPENAI_API_KEY": API_KEY, "TMPDIR": str(temp)}


def _request_kind(request: Request) -> str | None:
    """``request_kind`` of the ``x-codex-turn-metadata`` header (``turn`` for the agent)."""
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        metadata = json.loads(headers.get("x-codex-turn-metadata", ""))
    except ValueError:
        return None
    kind = metadata.get("request_kind") if isinstance(metadata, dict) else None
    return kind if isinstance(kind, str) else None


def _top_level_tools(body: dict[str, Any]) -> set[str]:
    """The names of the tools the request offers at the top level (none in code mode)."""
    return {str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)}


def _call(action: Action, code_mode: bool) -> dict[str, Any]:
    """The output item that makes Codex run ``action`` with its real tools."""
    call_id = f"call_{next(_ids)}"
    if isinstance(action, WriteFile):
        patch = _add_file(action)
        if code_mode:
            return _custom_call(call_id, "exec", _script("apply_patch", patch))
        return _custom_call(call_id, "apply_patch", patch)
    command = shlex.join(action.argv)
    if code_mode:
        return _custom_call(call_id, "exec", _script("exec_command", {"cmd": command}))
    arguments = json.dumps({"cmd": command})
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "exec_command",
        "arguments": arguments,
    }


def _add_file(write: WriteFile) -> str:
    """An ``apply_patch`` patch creating ``write.path`` with ``write.text``."""
    lines = "".join(f"+{line}\n" for line in write.text.splitlines())
    return f"*** Begin Patch\n*** Add File: {write.path}\n{lines}*** End Patch\n"


def _script(tool: str, argument: object) -> str:
    """Code mode's JavaScript calling one nested tool and returning what it answered."""
    return (
        f"const result = await tools.{tool}({json.dumps(argument)});\ntext(JSON.stringify(result));"
    )


def _custom_call(call_id: str, name: str, tool_input: str) -> dict[str, Any]:
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{call_id}",
        "call_id": call_id,
        "name": name,
        "input": tool_input,
        "status": "completed",
    }


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{next(_ids)}",
        "content": [{"type": "output_text", "text": text}],
    }


def _stream(items: list[dict[str, Any]]) -> Response:
    """One response: created, each item done, completed with a token count."""
    response_id = f"resp_{next(_ids)}"
    done = [
        ("response.output_item.done", {"type": "response.output_item.done", "item": item})
        for item in items
    ]
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    return Response(
        sse=(
            ("response.created", {"type": "response.created", "response": {"id": response_id}}),
            *done,
            (
                "response.completed",
                {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
            ),
        )
    )


def _limit(limit: Limit) -> Response:
    """The 429 the real backend sends for this kind of limit, with its headers."""
    if limit.kind == "subscription":
        return _usage_limit(limit.reset_seconds)
    if limit.kind == "api_rate":
        return _rate_limit(limit.reset_seconds or 1)
    raise ValueError(f"OpenAI has no {limit.kind} limit")


def _usage_limit(reset_seconds: int | None) -> Response:
    """The ChatGPT backend's ``usage_limit_reached``: the plan's 5-hour window is spent."""
    error: dict[str, Any] = {
        "type": "usage_limit_reached",
        "message": "The usage limit has been reached",
        "plan_type": "plus",
    }
    headers = [("x-codex-primary-used-percent", "100"), ("x-codex-primary-window-minutes", "300")]
    if reset_seconds is not None:
        resets_at = int(time.time()) + reset_seconds
        error |= {"resets_at": resets_at, "resets_in_seconds": reset_seconds}
        headers.append(("x-codex-primary-reset-at", str(resets_at)))
    headers += [
        ("x-codex-secondary-used-percent", "40"),
        ("x-codex-secondary-window-minutes", "10080"),
    ]
    return Response(429, {"error": error}, headers=tuple(headers))


def _rate_limit(retry_after: int) -> Response:
    """The OpenAI API's per-minute ``rate_limit_exceeded`` for an API key."""
    error = {
        "message": _RATE_LIMITED.format(seconds=retry_after),
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    headers = (
        ("retry-after", str(retry_after)),
        ("x-ratelimit-limit-tokens", "30000"),
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", f"{retry_after}s"),
    )
    return Response(429, {"error": error}, headers=headers)


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message, "param": None, "code": None}}
