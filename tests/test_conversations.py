"""Harness conversation listing and final-reply extraction, per platform adapter.

The fake agent saves each run where and as the real CLI does, so listing is tested end
to end through each adapter's own argv; hand-written samples in the real CLIs' shapes
(including Gemini CLI's legacy layout) prove the readers match what the CLIs write and
skip what is corrupt.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from canopy.platforms import HarnessConversation, Platform, get_platform
from canopy.platforms.base import JsonLinesPlatform
from canopy.platforms.claude import ClaudePlatform
from canopy.platforms.codex import CodexPlatform
from canopy.platforms.gemini import GeminiPlatform
from canopy.platforms.template import TemplatePlatform
from tests.agent_runs import run_agent

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
EXECUTABLE = (sys.executable, str(FAKE_AGENT))
ADAPTERS: dict[str, JsonLinesPlatform] = {
    "claude": ClaudePlatform(executable=EXECUTABLE),
    "codex": CodexPlatform(executable=EXECUTABLE),
    "gemini": GeminiPlatform(executable=EXECUTABLE),
}
HOME_VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
SESSION_A = "5f0c8a52-3c1e-4e8e-9a55-6f2d1b7c9e01"
SESSION_B = "7a1d9b63-4d2f-4f9f-8b66-7e3e2c8dae12"
SESSION_C = "8b2eac74-5e30-4a0a-9c77-8f4f3d9ebf23"
SESSION_D = "9c3fbd85-6f41-4b1b-8d88-905a4eafc034"


@dataclass(frozen=True)
class Homes:
    """Where each harness keeps its history in a test (all under ``tmp_path``)."""

    claude: Path
    codex: Path
    gemini: Path

    def by_variable(self) -> dict[str, Path]:
        """Each home under the environment variable its harness reads."""
        return dict(zip(HOME_VARIABLES, (self.claude, self.codex, self.gemini), strict=True))

    @property
    def gemini_dir(self) -> Path:
        """``$GEMINI_CLI_HOME/.gemini``: the variable stands in for the home directory."""
        return self.gemini / ".gemini"


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Homes:
    """Every harness home in ``tmp_path``; ``HOME`` too, so nothing reaches the real one."""
    found = Homes(tmp_path / "claude-config", tmp_path / "codex-home", tmp_path / "gemini-home")
    for variable, path in found.by_variable().items():
        monkeypatch.setenv(variable, str(path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "canopy"))
    for variable in ("FAKE_AGENT_DIRECTIVES", "FAKE_AGENT_FORMAT", "FAKE_AGENT_RECORD"):
        monkeypatch.delenv(variable, raising=False)
    return found


def run(platform: Platform, prompt: str, cwd: Path, resume: str | None = None) -> tuple[str, str]:
    """One fake-agent run with the adapter's own argv: (session id, stdout)."""
    done = run_agent(platform, prompt, cwd, resume=resume)
    assert done.code == 0, done.stderr
    assert done.session_id is not None, done.stdout
    return done.session_id, done.stdout


def ids(conversations: Iterable[HarnessConversation]) -> list[str]:
    return [conversation.conversation_id for conversation in conversations]


def workdirs(tmp_path: Path) -> tuple[Path, Path]:
    """Two workdirs with the same base name (Gemini CLI gives them distinct short ids)."""
    one, two = tmp_path / "one" / "repo", tmp_path / "two" / "repo"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    return one, two


def write_lines(path: Path, lines: Iterable[dict[str, Any] | str]) -> Path:
    """A JSON-lines file; a ``str`` line is written verbatim (corrupt on purpose)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def touch(path: Path, when: str) -> None:
    """Set a file's modification time (the harnesses' "last updated")."""
    stamp = datetime.fromisoformat(when).timestamp()
    os.utime(path, (stamp, stamp))


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# ------------------------------------------------------------- through the fake agent


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_lists_the_fake_agents_conversations(name: str, tmp_path: Path) -> None:
    platform = ADAPTERS[name]
    one, two = workdirs(tmp_path)
    first, _ = run(platform, "Fix the login bug\nIt fails on empty passwords.", one)
    second, _ = run(platform, "\n  Write the docs  \n", one)
    elsewhere, _ = run(platform, "Somewhere else", two)
    resumed, output = run(platform, "Carry on", one, resume=first)
    assert resumed == first

    listed = platform.conversations(one)
    assert ids(listed) == [first, second]  # the resumed one was updated last
    assert [c.title for c in listed] == ["Fix the login bug", "Write the docs"]
    assert ids(platform.conversations(two)) == [elsewhere]
    for conversation in listed:
        assert Path(conversation.workdir).resolve() == one.resolve()
        assert conversation.started_at is not None and conversation.updated_at is not None
        assert conversation.started_at.tzinfo == UTC and conversation.updated_at.tzinfo == UTC
        assert conversation.started_at <= conversation.updated_at
    assert listed[0].updated_at is not None and listed[1].updated_at is not None
    assert listed[0].updated_at > listed[1].updated_at
    assert platform.reply_text(output) == "fake agent done"


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_workdirs_compare_by_resolved_path(name: str, tmp_path: Path) -> None:
    platform = ADAPTERS[name]
    one, _ = workdirs(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(one)
    session, _ = run(platform, "Through a symlink", link)
    assert ids(platform.conversations(one)) == [session]
    assert ids(platform.conversations(link)) == [session]
    assert ids(platform.conversations(tmp_path / "one" / "." / "repo")) == [session]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_fake_agent_saves_nothing_without_its_home_variable(
    name: str, homes: Homes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in HOME_VARIABLES:
        monkeypatch.delenv(variable)
    one, _ = workdirs(tmp_path)
    run(ADAPTERS[name], "No history", one)
    assert not any(path.exists() for path in (homes.claude, homes.codex, homes.gemini))
    assert not (tmp_path / "home").exists()
    assert ADAPTERS[name].conversations(one) == []


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_missing_or_unusable_homes_list_nothing(
    name: str, homes: Homes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, _ = workdirs(tmp_path)
    assert ADAPTERS[name].conversations(one) == []
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for variable in HOME_VARIABLES:
        monkeypatch.setenv(variable, str(not_a_dir))
    assert ADAPTERS[name].conversations(one) == []


# ------------------------------------------------------------ the real formats: Claude


def claude_dir(homes: Homes, workdir: Path) -> Path:
    """Claude Code's project directory: the realpath, non-alphanumerics as ``-``."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(workdir.resolve()))
    return homes.claude / "projects" / name


def claude_event(
    kind: str, cwd: Path, when: str, message: object, **extra: object
) -> dict[str, Any]:
    """One transcript line as Claude Code writes it."""
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": str(cwd),
        "sessionId": SESSION_A,
        "version": "2.0.31",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": "0b8e7f6a-0000-4000-8000-000000000001",
        "timestamp": when,
        **extra,
    }


def claude_transcript(cwd: Path) -> list[dict[str, Any] | str]:
    """A session: a summary, injected and command turns, the prompt, tools, a torn line."""
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "p"}}
    prompt = [{"type": "text", "text": "Refactor the parser\nKeep the public API."}]
    return [
        {"type": "summary", "summary": "Parser refactor", "leafUuid": "0b8e7f6a"},
        claude_event(
            "user",
            cwd,
            "2025-11-02T09:00:00.000Z",
            {"role": "user", "content": "Caveat: The messages below were generated by the user."},
            isMeta=True,
        ),
        claude_event(
            "user",
            cwd,
            "2025-11-02T09:00:01.000Z",
            {"role": "user", "content": "<command-name>/model</command-name>\n<command-args>"},
        ),
        claude_event("user", cwd, "2025-11-02T09:00:02.000Z", {"role": "user", "content": prompt}),
        claude_event(
            "assistant",
            cwd,
            "2025-11-02T09:00:05.000Z",
            {"id": "msg_01", "type": "message", "role": "assistant", "content": [tool_use]},
            requestId="req_01",
        ),
        '{"parentUuid":"0b8e7f6a","type":"user","message":{"role":"user","cont',
        claude_event(
            "user",
            cwd,
            "2025-11-02T09:00:06.000Z",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01"}]},
        ),
    ]


def test_reads_claude_codes_transcripts(homes: Homes, tmp_path: Path) -> None:
    hyphenated, nested = tmp_path / "a-b", tmp_path / "a" / "b"
    hyphenated.mkdir()
    nested.mkdir(parents=True)
    folder = claude_dir(homes, hyphenated)
    assert folder == claude_dir(homes, nested)  # both cwds share one project directory
    mine = write_lines(folder / f"{SESSION_A}.jsonl", claude_transcript(hyphenated))
    touch(mine, "2025-11-02T10:00:00+00:00")
    theirs = write_lines(folder / f"{SESSION_B}.jsonl", claude_transcript(nested))
    sidechain = claude_event("user", hyphenated, "2025-11-02T09:00:00Z", "sub", isSidechain=True)
    write_lines(folder / f"{SESSION_C}.jsonl", [sidechain])
    write_lines(folder / "agent-1a2b3c4d.jsonl", claude_transcript(hyphenated))
    (folder / f"{SESSION_D}.jsonl").write_bytes(b"\x00\xff not json at all\n")

    (listed,) = ClaudePlatform().conversations(hyphenated)
    assert listed == HarnessConversation(
        conversation_id=SESSION_A,
        workdir=str(hyphenated),
        started_at=utc("2025-11-02T09:00:00+00:00"),
        updated_at=utc("2025-11-02T10:00:00+00:00"),
        title="Refactor the parser",
    )
    assert ids(ClaudePlatform().conversations(nested)) == [SESSION_B]
    assert theirs.exists()


def test_finds_claude_projects_whose_long_names_carry_a_hash(homes: Homes, tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 120) / ("y" * 120)
    deep.mkdir(parents=True)
    name = claude_dir(homes, deep).name
    assert len(name) > 200
    folder = homes.claude / "projects" / f"{name[:200]}-1k2j3h"
    write_lines(folder / f"{SESSION_A}.jsonl", claude_transcript(deep))
    assert ids(ClaudePlatform().conversations(deep)) == [SESSION_A]


# ------------------------------------------------------------- the real formats: Codex


def rollout(homes: Homes, thread: str, when: str = "2025-11-02T10-00-00") -> Path:
    """``sessions/YYYY/MM/DD/rollout-<stamp>-<thread>.jsonl``."""
    day = when[:10].replace("-", "/")
    return homes.codex / "sessions" / day / f"rollout-{when}-{thread}.jsonl"


def codex_record(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-11-02T09:00:01.000Z", "type": kind, "payload": payload}


def codex_meta(thread: str, cwd: Path, **extra: object) -> dict[str, Any]:
    """The ``session_meta`` line every rollout starts with."""
    payload = {
        "id": thread,
        "timestamp": "2025-11-02T09:00:00.000Z",
        "cwd": str(cwd),
        "originator": "codex_cli_rs",
        "cli_version": "0.53.0",
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
        "git": {"commit_hash": "3f1c2b", "branch": "main", "repository_url": "git@x:y.git"},
        **extra,
    }
    return codex_record("session_meta", payload)


def codex_user(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return codex_record("response_item", {"type": "message", "role": "user", "content": content})


def codex_thread(thread: str, cwd: Path, **meta: object) -> list[dict[str, Any] | str]:
    """A thread: injected instructions and context, a torn line, the prompt, a reply."""
    agents = f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nUse make.\n</INSTRUCTIONS>"
    context = (
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
    )
    prompt = "Add retries to the client\nwith exponential backoff"
    reply = [{"type": "output_text", "text": "Added."}]
    return [
        codex_meta(thread, cwd, **meta),
        codex_user(agents),
        codex_user(context),
        '{"timestamp":"2025-11-02T09:00:01.000Z","type":"response_item","payl',
        codex_user(prompt),
        codex_record("event_msg", {"type": "user_message", "message": prompt, "images": []}),
        codex_record("turn_context", {"cwd": str(cwd), "approval_policy": "on-request"}),
        codex_record("response_item", {"type": "reasoning", "summary": [], "content": None}),
        codex_record("event_msg", {"type": "agent_message", "message": "Added."}),
        codex_record("response_item", {"type": "message", "role": "assistant", "content": reply}),
    ]


def test_reads_codex_rollouts(homes: Homes, tmp_path: Path) -> None:
    one, two = workdirs(tmp_path)
    first = write_lines(rollout(homes, SESSION_A), codex_thread(SESSION_A, one))
    touch(first, "2025-11-02T09:30:00+00:00")
    ide_prompt = (
        "# Context from my IDE setup:\n\nfile: a.py\n## My request for Codex:\nRename the flag"
    )
    second = write_lines(
        rollout(homes, SESSION_B, "2025-11-03T08-00-00"),
        [
            codex_meta(SESSION_B, one, timestamp="2025-11-03T08:00:00.000Z"),
            codex_record("event_msg", {"type": "user_message", "message": ide_prompt}),
        ],
    )
    touch(second, "2025-11-03T08:10:00+00:00")
    write_lines(rollout(homes, SESSION_C), codex_thread(SESSION_C, two))
    spawned = {"subagent": {"thread_spawn": {"parent_thread_id": SESSION_A, "depth": 1}}}
    write_lines(rollout(homes, SESSION_D), codex_thread(SESSION_D, one, source=spawned))
    cut_short = rollout(homes, "0d4f0e96-7a52-4c2c-9e99-a16b5fb0d145")
    write_lines(cut_short, ['{"timestamp":"2025-11-02T09:00:00.000Z","type":"session_meta","pay'])
    (rollout(homes, SESSION_A).parent / "notes.txt").write_text("not a rollout")

    listed = CodexPlatform().conversations(one)
    assert listed == [
        HarnessConversation(
            SESSION_B,
            str(one),
            utc("2025-11-03T08:00:00+00:00"),
            utc("2025-11-03T08:10:00+00:00"),
            "Rename the flag",
        ),
        HarnessConversation(
            SESSION_A,
            str(one),
            utc("2025-11-02T09:00:00+00:00"),
            utc("2025-11-02T09:30:00+00:00"),
            "Add retries to the client",
        ),
    ]
    assert ids(CodexPlatform().conversations(two)) == [SESSION_C]


# ------------------------------------------------------------ the real formats: Gemini


def gemini_legacy(session: str, project: Path, updated: str, title: str) -> dict[str, Any]:
    """A whole-session JSON object, as Gemini CLI wrote ``.json`` chat files."""
    project_hash = hashlib.sha256(str(project).encode()).hexdigest()
    tokens = {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 15}
    return {
        "sessionId": session,
        "projectHash": project_hash,
        "startTime": "2025-09-01T10:00:00.000Z",
        "lastUpdated": updated,
        "messages": [
            {
                "id": "m1",
                "timestamp": "2025-09-01T10:00:00.000Z",
                "type": "user",
                "content": "/help",
            },
            {"id": "m2", "timestamp": "2025-09-01T10:00:01.000Z", "type": "info", "content": "…"},
            {"id": "m3", "timestamp": "2025-09-01T10:01:00.000Z", "type": "user", "content": title},
            {
                "id": "m4",
                "timestamp": "2025-09-01T10:01:30.000Z",
                "type": "gemini",
                "content": "It uses make.",
                "thoughts": [],
                "tokens": tokens,
                "model": "gemini-2.5-pro",
            },
        ],
    }


def gemini_jsonl(
    session: str, project: Path, updated: str, title: str
) -> list[dict[str, Any] | str]:
    """A JSON-lines chat file: metadata, messages, updates, a rewind and a torn line."""
    project_hash = hashlib.sha256(str(project).encode()).hexdigest()
    start = "2026-05-01T09:30:00.000Z"
    return [
        {
            "sessionId": session,
            "projectHash": project_hash,
            "startTime": start,
            "lastUpdated": start,
        },
        {
            "id": "u0",
            "timestamp": start,
            "type": "user",
            "content": [{"text": "<session_context>x"}],
        },
        {"id": "u1", "timestamp": start, "type": "user", "content": [{"text": title}]},
        {"$set": {"lastUpdated": start}},
        {
            "id": "g1",
            "timestamp": start,
            "type": "gemini",
            "content": "Draft",
            "model": "gemini-2.5",
        },
        {"id": "u2", "timestamp": start, "type": "user", "content": [{"text": "Never mind"}]},
        {"$rewindTo": "u2"},
        '{"id":"g2","timestamp":"2026-05-01T09:31:00.000Z","type":"gem',
        {"$set": {"lastUpdated": updated}},
    ]


def test_reads_gemini_cli_chats_in_every_layout(homes: Homes, tmp_path: Path) -> None:
    one, two = workdirs(tmp_path)
    project = one.resolve()
    tmp = homes.gemini_dir / "tmp"
    legacy = tmp / hashlib.sha256(str(project).encode()).hexdigest() / "chats"
    current = tmp / "repo" / "chats"
    (tmp / "repo").mkdir(parents=True)
    (tmp / "repo" / ".project_root").write_text(str(project))
    registry = {"projects": {str(project): "repo", str(two.resolve()): "repo-1"}}
    (homes.gemini_dir / "projects.json").write_text(json.dumps(registry))

    a = gemini_legacy(SESSION_A, project, "2025-09-01T10:05:00.000Z", "Explain the build\nslowly")
    (legacy / "session-2025-09-01T10-00-5f0c8a52.json").parent.mkdir(parents=True)
    (legacy / "session-2025-09-01T10-00-5f0c8a52.json").write_text(json.dumps(a, indent=2))
    b = gemini_jsonl(SESSION_B, project, "2026-05-01T09:40:00.000Z", "Add a --verbose flag")
    write_lines(current / "session-2026-05-01T09-30-7a1d9b63.jsonl", b)
    old_c = gemini_legacy(SESSION_C, project, "2025-09-02T10:00:00.000Z", "Old copy")
    (legacy / "session-2025-09-02T10-00-8b2eac74.json").write_text(json.dumps(old_c, indent=2))
    new_c = gemini_jsonl(SESSION_C, project, "2026-05-02T08:00:00.000Z", "Migrated copy")
    write_lines(current / "session-2025-09-02T10-00-8b2eac74.jsonl", new_c)
    subagent = gemini_jsonl(SESSION_D, project, "2026-05-03T08:00:00.000Z", "Sub")
    meta = subagent[0]
    assert isinstance(meta, dict)
    write_lines(
        current / "session-2026-05-03T08-00-9c3fbd85.jsonl",
        [{**meta, "kind": "subagent"}, *subagent[1:]],
    )
    write_lines(current / SESSION_A / "9c3fbd85.jsonl", subagent)  # a subagent's own dir
    write_lines(current / "session-2026-05-04T08-00-00000000.jsonl", [subagent[0]])  # no message
    (current / "session-2026-05-05T08-00-deadbeef.json").write_text("{not json")
    write_lines(tmp / "repo-1" / "chats" / "session-2026-05-01T09-30-0d4f0e96.jsonl", b)

    expected = [
        (SESSION_C, "2026-05-02T08:00:00+00:00", "Migrated copy"),
        (SESSION_B, "2026-05-01T09:40:00+00:00", "Add a --verbose flag"),
        (SESSION_A, "2025-09-01T10:05:00+00:00", "Explain the build"),
    ]
    listed = GeminiPlatform().conversations(one)
    assert [(c.conversation_id, c.updated_at, c.title) for c in listed] == [
        (session, utc(updated), title) for session, updated, title in expected
    ]
    assert {c.workdir for c in listed} == {str(project)}
    assert listed[2].started_at == utc("2025-09-01T10:00:00+00:00")
    (homes.gemini_dir / "projects.json").unlink()  # a reset registry: the marker still names it
    assert ids(GeminiPlatform().conversations(one)) == [SESSION_C, SESSION_B, SESSION_A]


def test_lists_only_the_gemini_sessions_gemini_cli_would_resume(
    homes: Homes, tmp_path: Path
) -> None:
    """Gemini CLI resumes a session only when it holds a real prompt or a reply (text, tool
    calls or thoughts); anything else it refuses, "No previous sessions found" (exit 42).
    A resumed run leaves such a file behind, holding only the injected
    ``<session_context>`` under the resumed id: it must neither be listed nor hide the
    real one, even when it was updated last."""
    one, _ = workdirs(tmp_path)
    project = one.resolve()
    chats = homes.gemini_dir / "tmp" / "repo" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(str(project))
    real = gemini_jsonl(SESSION_B, project, "2026-05-01T09:40:00.000Z", "Add a flag")
    meta, context = real[0], real[1]
    assert isinstance(meta, dict) and isinstance(context, dict)
    write_lines(chats / "session-2026-05-01T09-30-7a1d9b63.jsonl", real)
    later = {
        **meta,
        "startTime": "2026-05-01T09:45:00.000Z",
        "lastUpdated": "2026-05-01T09:45:00.000Z",
    }
    write_lines(chats / "session-2026-05-01T09-45-7a1d9b63.jsonl", [later, context])

    def message(kind: str, content: object, **extra: object) -> dict[str, Any]:
        return {
            "id": f"{kind}-{content}",
            "timestamp": "t",
            "type": kind,
            "content": content,
            **extra,
        }

    unspoken = [
        {**meta, "sessionId": SESSION_A},
        context,
        message("user", "/help"),
        message("user", [{"text": "?"}]),
        message("user", "  "),
        message("gemini", "", thoughts=[], toolCalls=[]),
        message("info", "Switched model"),
    ]
    write_lines(chats / "session-2026-05-02T08-00-5f0c8a52.jsonl", unspoken)
    tool_call = {"id": "c1", "name": "glob", "args": {"pattern": "*"}}
    acted = [
        {**meta, "sessionId": SESSION_C},
        context,
        message("gemini", "", toolCalls=[tool_call]),
    ]
    write_lines(chats / "session-2026-05-03T08-00-8b2eac74.jsonl", acted)

    listed = GeminiPlatform().conversations(one)
    assert [(c.conversation_id, c.title) for c in listed] == [
        (SESSION_B, "Add a flag"),
        (SESSION_C, ""),
    ]


# ------------------------------------------------------------------------ final replies


def claude_output(*, failed: bool) -> str:
    """``claude -p --output-format stream-json --verbose`` output, stderr noise included."""
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}

    def assistant(*content: dict[str, Any]) -> dict[str, Any]:
        body = {**message, "content": list(content), "stop_reason": None}
        return {"type": "assistant", "message": body, "parent_tool_use_id": None, "session_id": "S"}

    tool_result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "def parse(): ..."}
    result: dict[str, Any] = {
        "type": "result",
        "subtype": "error_max_turns" if failed else "success",
        "is_error": failed,
        "duration_ms": 5120,
        "num_turns": 3,
        "session_id": "S",
        "total_cost_usd": 0.0123,
    }
    if not failed:
        result["result"] = "The parser now handles tabs."
    events = [
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": "S", "model": "sonnet"},
        assistant({"type": "text", "text": "Let me read the parser."}),
        assistant(
            {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "p"}}
        ),
        {"type": "user", "message": {"role": "user", "content": [tool_result]}, "session_id": "S"},
        assistant({"type": "text", "text": "The parser now handles tabs."}),
        assistant(
            {"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {"command": "make"}}
        ),
        result,
    ]
    return "\n".join(["[warn] slow network", *map(json.dumps, events)]) + "\n"


def test_claude_reply_is_the_result_else_the_last_assistant_text() -> None:
    claude = ClaudePlatform()
    assert claude.reply_text(claude_output(failed=False)) == "The parser now handles tabs."
    assert claude.reply_text(claude_output(failed=True)) == "The parser now handles tabs."
    assert claude.reply_text("error: not logged in\n") is None
    assert get_platform("demo").reply_text(claude_output(failed=False)) == (
        "The parser now handles tabs."
    )


def test_codex_reply_is_the_last_agent_message() -> None:
    events = [
        {"type": "thread.started", "thread_id": SESSION_A},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"},
        },
        {
            "type": "item.completed",
            "item": {"id": "item_1", "type": "agent_message", "text": "First."},
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_2",
                "type": "command_execution",
                "command": "bash -lc 'make test'",
                "aggregated_output": "ok\n",
                "exit_code": 0,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {"id": "item_3", "type": "agent_message", "text": "All tests pass."},
        },
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 9, "cached_input_tokens": 0, "output_tokens": 3},
        },
    ]
    codex = CodexPlatform()
    assert codex.reply_text("\n".join(map(json.dumps, events))) == "All tests pass."
    failed = [events[0], {"type": "turn.failed", "error": {"message": "boom"}}]
    assert codex.reply_text("\n".join(map(json.dumps, failed))) is None


def test_gemini_reply_is_the_last_model_turns_text() -> None:
    stamp = {"timestamp": "2026-05-01T09:30:00.000Z"}
    events = [
        {"type": "init", **stamp, "session_id": SESSION_A, "model": "gemini-2.5-pro"},
        {"type": "message", **stamp, "role": "user", "content": "Why does the build fail?"},
        {
            "type": "message",
            **stamp,
            "role": "assistant",
            "content": "I'll read it.",
            "delta": True,
        },
        {"type": "tool_use", **stamp, "tool_name": "read_file", "tool_id": "r1", "parameters": {}},
        {"type": "tool_result", **stamp, "tool_id": "r1", "status": "success", "output": ""},
        {"type": "message", **stamp, "role": "assistant", "content": "The `test` ", "delta": True},
        {
            "type": "message",
            **stamp,
            "role": "assistant",
            "content": "target needs 3.11.",
            "delta": True,
        },
        {"type": "result", **stamp, "status": "success", "stats": {"total_tokens": 15}},
    ]
    gemini = GeminiPlatform()
    assert gemini.reply_text("\n".join(map(json.dumps, events))) == "The `test` target needs 3.11."
    assert gemini.reply_text("\n".join(map(json.dumps, events[:2]))) is None


def test_template_platforms_reply_with_their_plain_output(tmp_path: Path) -> None:
    template = TemplatePlatform(name="mytool", argv=("mytool", "{prompt}"))
    assert template.reply_text("\n  The answer is 42.\n\n") == "The answer is 42."
    assert template.reply_text(" \n\t\n") is None
    assert template.conversations(tmp_path) is None


def test_a_conversation_is_never_updated_before_it_started() -> None:
    """The file's modification time comes from the kernel's coarse clock, which can run a
    few milliseconds behind the timestamp the harness wrote into the file (a flake seen
    with the fake Codex)."""
    started, modified = utc("2026-12-04T10:00:00.004+00:00"), utc("2026-12-04T10:00:00.001+00:00")
    conversation = HarnessConversation("c1", "/src", started, modified, "title")
    assert conversation.updated_at == started
    later = utc("2026-12-04T11:00:00+00:00")
    assert HarnessConversation("c2", "/src", started, later, "title").updated_at == later
