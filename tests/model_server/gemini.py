"""The Gemini API as Gemini CLI (0.61.0) calls it with an API key, answered from a script.

What Gemini CLI does against it, learned by running the pinned CLI:

- Auth: ``GEMINI_API_KEY`` plus ``security.auth.selectedType = "gemini-api-key"`` in
  ``$GEMINI_CLI_HOME/.gemini/settings.json``; ``GOOGLE_GEMINI_BASE_URL`` points it here.
  Without the setting the base URL selects the "gateway" auth type and a headless run
  exits 41, as it does with no key at all.
- Requests: ``POST /v1beta/models/<model>:generateContent`` for its own side questions,
  each asking for JSON (``generationConfig.responseJsonSchema``): the router's complexity
  score (first, on every turn of an ``auto`` model), the next-speaker check, loop
  detection. They take no turn; their answers keep the run on its script (score 1 routes
  to the flash model, the user speaks next, no loop). The agent's own turns are ``POST
  …:streamGenerateContent?alt=sse``: server-sent events, ``data: {candidates, usageMetadata}``.
- Tools: ``write_file`` (``file_path`` relative to the workdir, ``content``) and
  ``run_shell_command`` (``command``, a shell line). A headless run offers them only in
  YOLO mode (``auto_edit`` adds the file tools, never the shell); a call to a tool not
  offered comes back as a ``tool_not_registered`` error, one the policy refuses as
  ``policy_violation``. Plan mode's tools have no Script action: :class:`ToolCall`.
- Limits, all a 429 ``RESOURCE_EXHAUSTED`` (Gemini CLI sorts them by the body):
  ``daily_quota`` carries a ``QuotaFailure`` whose ``quotaId`` says ``PerDay`` and a
  ``RetryInfo`` delay: the CLI gives up at once ("You have exhausted your daily quota on
  this model.", exit 173), the delay only in the stack trace it prints on stderr.
  ``capacity`` is Code Assist's "You have exhausted your capacity on this model. Your
  quota will reset after 2h0m0s." (``ErrorInfo`` ``QUOTA_EXHAUSTED``, ``RetryInfo``): the
  CLI retries it silently, after the delay plus up to 20 % ("Attempt 1 failed: … Retrying
  after 8212190ms..."), and sleeps that long; the body, not the auth type, picks that
  path, so an API key reaches it too. ``api_rate`` with a reset is the per-minute quota
  (``PerMinute``, ``RetryInfo``): retried after the delay ("… Suggested retry after 30s..
  Retrying after 30182ms..."); without one, a bare 429 retried with backoff (5 s, doubling
  to 30 s: "Attempt 1 failed with status 429. Retrying with backoff... _ApiError: …" and
  the error's stack trace). A retry waits at least 5 s. ``general.maxAttempts`` in the
  settings caps the attempts (10 by default); once they are spent the CLI exits 173.
- It writes a "Full report" of each API error into ``$TMPDIR``, and its chats, project
  registry and history under ``$GEMINI_CLI_HOME/.gemini``.
"""

from __future__ import annotations

import json
import shlex
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
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
    Script,
    Turn,
    Vendor,
    WriteFile,
)

API_KEY = "canopy-test-key"
_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
_SIDE_ANSWERS: dict[str, Any] = {
    "complexity_score": 1,
    "next_speaker": "user",
    "unproductive_state_confidence": 0,
}
"""Side questions whose answer steers the run: the router, the next-speaker check, loops."""
_QUOTA_TEXT = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
    "To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded "
    "for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, "
    "limit: {limit}, model: gemini-2.5-flash"
)


@dataclass(frozen=True)
class ToolCall:
    """A call to a Gemini CLI tool by name, for tools the shared Script has no action for
    (``read_file``, ``enter_plan_mode``, ``exit_plan_mode``…)."""

    name: str
    args: dict[str, Any]


class GeminiAPI(Vendor):
    """``…:streamGenerateContent`` takes a turn: first the ``calls`` turns, then the
    script's; ``…:generateContent`` (Gemini CLI's side questions) takes none."""

    name = "gemini"

    def __init__(self, script: Script, calls: Iterable[tuple[ToolCall, ...]] = ()) -> None:
        super().__init__(script)
        self.calls = deque(calls)

    def answer(self, request: Request) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        if ":streamGenerateContent" in request.path:
            if self.calls:
                calls = self.calls.popleft()
                return _stream([{"functionCall": {"name": c.name, "args": c.args}} for c in calls])
            return _turn(self.script.next_turn())
        if ":generateContent" in request.path:
            return Response(body=_candidate([{"text": _side_answer(body)}]))
        return Response(404, {"error": {"code": 404, "message": f"no route {request.path}"}})


def cli_env(server: ModelServer, home: Path, *, max_attempts: int | None = None) -> dict[str, str]:
    """Gemini CLI's environment against ``server``: an isolated ``home`` whose settings pick
    API-key auth (and cap the CLI's own attempts per request at ``max_attempts``), the key,
    the server as the API's base URL, and a private ``TMPDIR`` for its error reports."""
    env = isolated_home(home)
    settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    if max_attempts is not None:
        settings["general"] = {"maxAttempts": max_attempts}
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    (home / "tmp").mkdir(exist_ok=True)
    return {
        **env,
        "GEMINI_API_KEY": API_KEY,
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "TMPDIR": str(home / "tmp"),
    }


def _turn(turn: Turn) -> Response:
    if isinstance(turn, Limit):
        return _limit(turn)
    if isinstance(turn, Say):
        return _stream([{"text": turn.text}])
    return _stream([_function_call(action) for action in turn])


def _function_call(action: Action) -> dict[str, Any]:
    if isinstance(action, WriteFile):
        call = {"name": "write_file", "args": {"file_path": action.path, "content": action.text}}
    else:
        call = {"name": "run_shell_command", "args": {"command": shlex.join(action.argv)}}
    return {"functionCall": call}


def _stream(parts: list[dict[str, Any]]) -> Response:
    return Response(sse=((None, _candidate(parts)),))


def _candidate(parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = {"role": "model", "parts": parts}
    return {
        "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _USAGE,
    }


def _side_answer(body: dict[str, Any]) -> str:
    """JSON filling the requested schema (steering answers where known), else a text."""
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
    return json.dumps(_fill(schema)) if isinstance(schema, dict) else "Noted."


def _fill(schema: dict[str, Any], name: str = "") -> Any:
    if name in _SIDE_ANSWERS:
        return _SIDE_ANSWERS[name]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: _fill(value, key) for key, value in properties.items()}
    return {"array": [], "integer": 0, "number": 0, "boolean": False}.get(kind, "scripted")


def _limit(limit: Limit) -> Response:
    """The 429 body of each kind, as the Gemini API (and Code Assist) sends it."""
    reset = limit.reset_seconds
    details: list[dict[str, Any]] = []
    if limit.kind == "capacity":
        after = f" Your quota will reset after {_clock(reset)}." if reset is not None else ""
        message = f"You have exhausted your capacity on this model.{after}"
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "QUOTA_EXHAUSTED",
                "domain": "cloudcode-pa.googleapis.com",
                "metadata": {"uiMessage": "true", "model": "gemini-2.5-pro"},
            }
        )
    elif limit.kind == "daily_quota" or (limit.kind == "api_rate" and reset is not None):
        window, allowed = ("PerDay", 250) if limit.kind == "daily_quota" else ("PerMinute", 10)
        message = _QUOTA_TEXT.format(limit=allowed)
        message += f"\nPlease retry in {reset}s." if reset is not None else ""
        violation = {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": f"GenerateRequests{window}PerProjectPerModel-FreeTier",
            "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
            "quotaValue": str(allowed),
        }
        details.append(
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]}
        )
    elif limit.kind == "api_rate":
        message = "Resource has been exhausted (e.g. check quota)."
    else:
        raise ValueError(f"the Gemini API has no {limit.kind} limit")
    if reset is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{reset}s"}
        )
    error = {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": details}
    return Response(429, {"error": error})


def _clock(seconds: int) -> str:
    """Code Assist's rendering of a wait: ``2h0m0s``."""
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60}m{rest % 60}s"
