"""The real Gemini CLI, launched with the argv Canopy builds, against a scripted model.

Each test runs the pinned ``gemini`` (package.json) as a node run does, argv and stdin
from :meth:`GeminiPlatform.build_invocation`, in a fresh git repo nobody ever trusted and
an isolated home, inside a network namespace where only the scripted Gemini API on
127.0.0.1 is reachable (:mod:`tests.model_server.gemini`). Only the model is fake: the
trust check, the tools, the approval modes and policies, the session files and the quota
handling are Gemini CLI's own. They prove:

- ``workspace`` gets past the trust check, writes files and runs any program in the
  workdir (as root and as another user), and its file tools refuse paths outside it;
- ``read-only`` reads, but writes and runs nothing, even by way of plan mode (which,
  without Canopy's policy, switches a headless run to YOLO), and :meth:`denials` names
  each refusal; ``cli`` passes nothing, so an untrusted workdir stops before any request;
- the ``--session-id`` Canopy chooses is the session the output announces, resuming it
  sends the first turn back to the model, and the conversation is listed once;
- the daily quota is a usage limit resetting when the API said (read from a stack trace),
  a per-minute rate limit the CLI gave up on is a rate limit, and the CLI's own retries,
  the two-hour sleep on exhausted capacity among them, are retry notices whose stack
  traces are not taken for the run's failure.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from canopy.permissions import Permissions
from canopy.platforms import Invocation, RetryNotice
from canopy.platforms.gemini import GeminiPlatform
from tests.model_server.clis import cli_path
from tests.model_server.core import (
    RUN,
    Limit,
    LoopbackOnly,
    ModelServer,
    Say,
    Script,
    WriteFile,
    loopback_only,
)
from tests.model_server.gemini import GeminiAPI, ToolCall, cli_env

WRITE = WriteFile("hello.txt", "hi\n")
PLAN = "# Plan\n\n1. Run the program.\n"
PLAN_MODE_WAY_OUT = [
    (ToolCall("enter_plan_mode", {"reason": "plan first"}),),
    (ToolCall("write_file", {"file_path": "plan.md", "content": PLAN}),),
    (ToolCall("exit_plan_mode", {"plan_filename": "plan.md"}),),
]
"""How a headless run in the default approval mode reaches YOLO: plan mode lets it write a
plan, and leaving plan mode headless switches to YOLO."""
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
as_root_only = pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to another user")
TIMEOUT = 60


@dataclass
class Run:
    """One finished CLI run: its exit status and output (stdout, then stderr)."""

    returncode: int
    output: str


@dataclass
class Gemini:
    """The real CLI against a scripted server, in ``workdir`` with its own ``home``."""

    network: LoopbackOnly
    server: ModelServer
    api: GeminiAPI
    workdir: Path
    home: Path
    platform = GeminiPlatform()

    def invocation(
        self,
        permissions: Permissions = "workspace",
        *,
        session_id: str | None = None,
        resume: str | None = None,
        prompt: str = "Do the task.",
    ) -> Invocation:
        """What Canopy launches, run from the pinned CLI inside the namespace."""
        platform = GeminiPlatform(executable=(*self.network.prefix(), str(cli_path("gemini"))))
        return platform.build_invocation(
            prompt,
            model=None,
            effort=None,
            resume_session_id=resume,
            permissions=permissions,
            session_id=session_id,
        )

    def env(self, max_attempts: int | None = None) -> dict[str, str]:
        return {**os.environ, **cli_env(self.server, self.home, max_attempts=max_attempts)}

    def run(
        self,
        invocation: Invocation,
        *,
        user: list[str] | None = None,
        max_attempts: int | None = None,
    ) -> Run:
        """Run to the end (``user``: an argv prefix that drops to another user)."""
        argv = invocation.argv
        if user:
            prefix = len(self.network.prefix())
            argv = [*argv[:prefix], *user, *argv[prefix:]]
        done = subprocess.run(
            argv,
            input=invocation.stdin,
            env=self.env(max_attempts),
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return Run(done.returncode, done.stdout + done.stderr)

    def first_retry(self, invocation: Invocation) -> RetryNotice:
        """Start a run and stop it at its first retry notice on stderr, however long the
        CLI meant to wait before trying again."""
        process = subprocess.Popen(
            invocation.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=self.env(),
            cwd=self.workdir,
            start_new_session=True,
        )
        assert process.stdin is not None and process.stderr is not None
        try:
            process.stdin.write((invocation.stdin or "").encode())
            process.stdin.close()
            seen: list[str] = []
            for line in lines_until(process.stderr.fileno(), TIMEOUT):
                notice = self.platform.retry_notice(line)
                if notice is not None:
                    return notice
                seen.append(line)
            raise AssertionError("no retry notice:\n" + "\n".join(seen))
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def lines_until(fd: int, seconds: float) -> Iterator[str]:
    """The lines read from ``fd`` as they come, until it closes or ``seconds`` pass with
    nothing to read."""
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while selector.select(seconds):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            yield from (line.decode(errors="replace") for line in lines)
    if pending:
        yield pending.decode(errors="replace")


@contextmanager
def scripted_gemini(base: Path, *, owner: int | None = None) -> Iterator[Gemini]:
    """A git workdir and a home under ``base`` (given to ``owner``), and a scripted server."""
    workdir, home = base / "work", base / "home"
    workdir.mkdir()
    subprocess.run(["git", "init", "--quiet", str(workdir)], check=True)
    (workdir / "README.md").write_text("The answer is 42.\n")
    api = GeminiAPI(Script())
    with loopback_only() as network, ModelServer(api, network) as server:
        gemini = Gemini(network, server, api, workdir, home)
        gemini.env()  # the home, settings included, exists before it changes hands
        if owner is not None:
            for path in [base, *base.rglob("*")]:
                os.chown(path, owner, owner, follow_symlinks=False)
        yield gemini


@pytest.fixture
def gemini(tmp_path: Path) -> Iterator[Gemini]:
    with scripted_gemini(tmp_path) as gemini:
        yield gemini


def session_ids(run: Run) -> set[str]:
    platform = GeminiPlatform()
    return {
        found for text in run.output.splitlines() if (found := platform.session_id_from_line(text))
    }


def turns_sent(gemini: Gemini) -> list[str]:
    """The ``contents`` of each agent turn the CLI sent, as JSON text."""
    return [
        json.dumps(request.body["contents"])
        for request in gemini.server.requests
        if ":streamGenerateContent" in request.path and isinstance(request.body, dict)
    ]


# ------------------------------------------------------------------------ permissions


def test_workspace_writes_files_and_runs_any_program_in_an_untrusted_workdir(
    gemini: Gemini, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    gemini.api.script.push((WRITE, RUN, WriteFile(str(outside), "no\n")), Say("Wrote and ran it."))
    run = gemini.run(gemini.invocation("workspace"))
    assert run.returncode == 0, run.output
    assert (gemini.workdir / "hello.txt").read_text() == "hi\n"
    assert (gemini.workdir / "ran.txt").read_text() == "ok"
    assert not outside.exists()
    assert gemini.platform.denials(run.output) == [f"write_file {outside} (outside the workspace)"]
    assert gemini.platform.reply_text(run.output) == "Wrote and ran it."
    assert gemini.platform.usage_limit(run.output, datetime.now(UTC)) is None


@as_root_only
def test_workspace_as_another_user() -> None:
    """The same argv, run by ``nobody`` in a temp dir it owns (pytest's is root's alone)."""
    with tempfile.TemporaryDirectory() as base, scripted_gemini(Path(base), owner=NOBODY) as gemini:
        gemini.api.script.push((WRITE, RUN), Say("Done."))
        run = gemini.run(gemini.invocation("workspace"), user=AS_NOBODY)
        assert run.returncode == 0, run.output
        assert (gemini.workdir / "ran.txt").stat().st_uid == NOBODY
        assert (gemini.workdir / "hello.txt").read_text() == "hi\n"
        assert gemini.platform.denials(run.output) == []


def test_read_only_reads_but_writes_and_runs_nothing_not_even_through_plan_mode(
    gemini: Gemini,
) -> None:
    gemini.api.calls.extend(
        [(ToolCall("read_file", {"file_path": "README.md"}),), *PLAN_MODE_WAY_OUT]
    )
    gemini.api.script.push((WRITE, RUN), Say("I was not allowed."))
    run = gemini.run(gemini.invocation("read-only"))
    assert run.returncode == 0, run.output
    assert sorted(path.name for path in gemini.workdir.iterdir()) == [".git", "README.md"]
    assert "The answer is 42." in turns_sent(gemini)[1], "the file was read"
    assert gemini.platform.denials(run.output) == [
        "enter_plan_mode (not offered)",
        "write_file plan.md (not offered)",
        "exit_plan_mode (not offered)",
        "write_file hello.txt (not offered)",
        "run_shell_command: python3 -c 'open('\"'\"'ran.txt'\"'\"', '\"'\"'w'\"'\"')"
        ".write('\"'\"'ok'\"'\"')' (not offered)",
    ]


def test_without_the_policy_plan_mode_is_a_way_out_of_the_default_mode(gemini: Gemini) -> None:
    """Why ``read-only`` needs its policy: the same run, the policy left out, ends in YOLO
    and runs the program. Should Gemini CLI close this, the policy may go."""
    gemini.api.calls.extend(PLAN_MODE_WAY_OUT)
    gemini.api.script.push((RUN,), Say("Ran it anyway."))
    read_only = gemini.invocation("read-only")
    policy = read_only.argv.index("--policy")
    without = Invocation(read_only.argv[:policy] + read_only.argv[policy + 2 :], read_only.stdin)
    run = gemini.run(without)
    assert run.returncode == 0, run.output
    assert (gemini.workdir / "ran.txt").read_text() == "ok"


def test_cli_passes_nothing_so_an_untrusted_workdir_stops_at_once(gemini: Gemini) -> None:
    run = gemini.run(gemini.invocation("cli"))
    assert run.returncode == 55, run.output
    assert "Gemini CLI is not running in a trusted directory" in run.output
    assert gemini.server.requests == []


# ------------------------------------------------------------------ sessions


def test_the_chosen_session_is_resumed_with_its_first_turn_and_listed_once(
    gemini: Gemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = str(uuid.uuid4())
    gemini.api.script.push(Say("First answer."))
    first = gemini.run(gemini.invocation(session_id=chosen, prompt="First question?"))
    assert first.returncode == 0, first.output
    assert session_ids(first) == {chosen}
    gemini.api.script.push(Say("Second answer."))
    second = gemini.run(gemini.invocation(resume=chosen, prompt="Second question?"))
    assert second.returncode == 0, second.output
    assert session_ids(second) == {chosen}
    assert gemini.platform.reply_text(second.output) == "Second answer."
    sent = turns_sent(gemini)[-1]
    assert sent.index("First question?") < sent.index("First answer.") < sent.index("Second")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini.home))
    listed = gemini.platform.conversations(gemini.workdir)
    assert [(c.conversation_id, c.title) for c in listed] == [(chosen, "First question?")]


# ---------------------------------------------------------------------- limits


def test_daily_quota_after_a_retried_rate_limit_resets_when_the_api_said(gemini: Gemini) -> None:
    """The rate limit is retried (with backoff: about 5 s), the daily quota is not."""
    gemini.api.script.push(Limit("api_rate", repeat=False), Limit("daily_quota", 2 * 3600))
    run = gemini.run(gemini.invocation())
    now = datetime.now(UTC)
    assert run.returncode == 173, run.output
    limit = gemini.platform.usage_limit(run.output, now)
    assert limit is not None and limit.kind == "usage" and limit.reset_at is not None
    assert abs(limit.reset_at - (now + timedelta(hours=2))) < timedelta(minutes=1)
    assert limit.message == "[API Error: You have exhausted your daily quota on this model.]"
    notices = [n for n in map(gemini.platform.retry_notice, run.output.splitlines()) if n]
    assert len(notices) == 1 and notices[0].wait is None
    assert notices[0].message.startswith("Attempt 1 failed with status 429. Retrying with backoff")
    plain = [text.strip() for text in run.output.splitlines() if not text.startswith("{")]
    assert "throwErrorIfNotOK" in "".join(plain), "the retried attempt printed its trace"
    assert "throwErrorIfNotOK" not in "".join(gemini.platform.failure_lines(plain))


def test_a_rate_limit_the_cli_gave_up_on_is_a_rate_limit(gemini: Gemini) -> None:
    gemini.api.script.push(Limit("api_rate", reset_seconds=30))
    run = gemini.run(gemini.invocation(), max_attempts=1)
    now = datetime.now(UTC)
    assert run.returncode == 173, run.output
    limit = gemini.platform.usage_limit(run.output, now)
    assert limit is not None and limit.kind == "rate" and limit.reset_at is not None
    assert abs(limit.reset_at - (now + timedelta(seconds=30))) < timedelta(seconds=10)


def test_a_per_minute_rate_limit_is_retried_after_the_delay_the_api_gave(gemini: Gemini) -> None:
    gemini.api.script.push(Limit("api_rate", reset_seconds=30))
    notice = gemini.first_retry(gemini.invocation())
    assert notice.message.startswith("Suggested retry after 30s.. Retrying after ")
    assert notice.wait is not None and timedelta(seconds=30) <= notice.wait <= timedelta(seconds=36)


def test_exhausted_capacity_is_a_retry_notice_with_the_long_sleep(gemini: Gemini) -> None:
    """Gemini CLI would sleep the two hours inside the run; the notice says how long."""
    gemini.api.script.push(Limit("capacity", reset_seconds=2 * 3600))
    notice = gemini.first_retry(gemini.invocation())
    assert notice.message.startswith(
        "Attempt 1 failed: You have exhausted your capacity on this model. Your quota will "
        "reset after 2h0m0s.. Retrying after "
    )
    assert notice.wait is not None
    assert timedelta(hours=2) <= notice.wait <= timedelta(hours=2.4)
