"""The real Codex CLI, launched with the argv Canopy builds, against a scripted model.

Each test runs the pinned ``codex`` (package.json) exactly as a node run does, argv and
stdin from :meth:`CodexPlatform.build_invocation`, in a fresh git repo and an isolated
home, inside a network namespace where only the scripted Responses API on 127.0.0.1 is
reachable (:mod:`tests.model_server.openai`). Only the model is fake: the tools, the
sandbox, the rollout files and the retry and limit handling are Codex's own. Permission
tests run twice: with the default model, whose only tool is code mode's JavaScript
``exec``, and with ``gpt-5.5``, which calls ``apply_patch`` and ``exec_command`` directly.
They prove:

- ``canopy doctor``'s checks (version, who is signed in, each level's argv accepted, the
  sandbox helper Codex cannot link under the temp dir) ask the CLI, never the model;
- ``workspace`` lets the agent write files, run any program and commit in the workdir, as
  root and as another user, and its sandbox refuses writes outside; ``read-only`` lets
  nothing be written or run; ``full`` writes anywhere; :meth:`denials` names each refusal;
- the thread id read from the output is the one a resume continues, with the first turn
  sent back to the model and the permission flags still applied;
- a ChatGPT plan's 429 is a usage limit resetting when the body says, an API key's 429 a
  rate limit with no reset, and Codex's own retries (``Reconnecting...``, also when the
  model cannot be reached at all) are retry notices, not progress.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from canopy.permissions import PERMISSION_LEVELS, Permissions
from canopy.platforms import Invocation, UsageLimit
from canopy.platforms.codex import CodexPlatform
from tests.model_server.clis import REPO, cli_path
from tests.model_server.core import (
    RUN,
    WRITE,
    Limit,
    LoopbackOnly,
    ModelServer,
    Request,
    RunCommand,
    Say,
    Script,
    WriteFile,
    loopback_only,
    strings,
)
from tests.model_server.openai import OpenAIResponsesAPI, cli_env

COMMIT = RunCommand(("git", "-c", "user.name=A", "-c", "user.email=a@example.com", "commit",
                     "--quiet", "--allow-empty", "--message", "agent commit"))  # fmt: skip
MODELS = [None, "gpt-5.5"]
"""The default model (code mode) and one with the patch and command tools of its own."""
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
as_root_only = pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to another user")


@dataclass
class Run:
    """One finished CLI run: its exit status and output (stderr merged, as a node's log)."""

    returncode: int
    output: str


@dataclass
class Codex:
    """The real CLI against a scripted server, in ``workdir`` with its own ``home``."""

    network: LoopbackOnly
    server: ModelServer
    script: Script
    workdir: Path
    home: Path
    platform = CodexPlatform(executable=(str(cli_path("codex")),))

    def invocation(
        self,
        permissions: Permissions = "workspace",
        *,
        model: str | None = None,
        effort: str | None = None,
        resume: str | None = None,
        prompt: str = "Do the task.",
    ) -> Invocation:
        return self.platform.build_invocation(
            prompt, model=model, effort=effort, resume_session_id=resume, permissions=permissions
        )

    def start(
        self,
        invocation: Invocation,
        user: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        """Launch as a node does (``user``: an argv prefix that drops to another user;
        ``env``: on top of the CLI's)."""
        process = subprocess.Popen(
            [*self.network.prefix(), *(user or []), *invocation.argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self.workdir,
            env={**os.environ, **cli_env(self.server, self.home), **(env or {})},
            start_new_session=True,
        )
        return process

    def run(
        self,
        invocation: Invocation,
        user: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> Run:
        """Run to the end, the prompt on stdin."""
        process = self.start(invocation, user, env)
        try:
            output, _ = process.communicate(invocation.stdin, timeout=60)
        finally:
            stop(process)
        return Run(process.returncode, output)


def stop(process: subprocess.Popen[str]) -> None:
    """Kill the CLI and everything it started (its own process group), if still running."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def scripted_codex(base: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Codex]:
    """A git workdir and a home under ``base``, and a scripted server; ``CODEX_HOME`` is
    the CLI's, so the adapter reads the same rollouts."""
    script = Script()
    workdir, home = base / "work", base / "home"
    workdir.mkdir()
    subprocess.run(["git", "init", "--quiet", str(workdir)], check=True)
    with loopback_only() as network, ModelServer(OpenAIResponsesAPI(script), network) as server:
        env = cli_env(server, home)
        monkeypatch.setenv("CODEX_HOME", env["CODEX_HOME"])
        yield Codex(network, server, script, workdir, home)


@pytest.fixture
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Codex]:
    with scripted_codex(tmp_path, monkeypatch) as codex:
        yield codex


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workdir that the sandbox does not open (it opens /tmp)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as path:
        yield Path(path)


def thread_ids(run: Run) -> set[str]:
    return {
        found
        for line in run.output.splitlines()
        if (found := Codex.platform.session_id_from_line(line))
    }


def agent_requests(server: ModelServer) -> list[Request]:
    return [r for r in server.requests if r.path.endswith("/responses")]


def input_texts(request: Request) -> str:
    """Every text the request's input items carry, joined (messages and tool outputs)."""
    return "\n".join(strings(request.body["input"]))


def committed(workdir: Path) -> list[str]:
    log = ["git", "-c", "safe.directory=*", "-C", str(workdir), "log", "--format=%s"]
    return subprocess.run(log, capture_output=True, text=True, check=False).stdout.split()


# ------------------------------------------------------------------------ permissions


@pytest.mark.parametrize("model", MODELS)
def test_workspace_writes_files_runs_any_program_and_commits(
    codex: Codex, model: str | None
) -> None:
    codex.script.push((WRITE, RUN), (COMMIT,), Say("Wrote, ran and committed it."))
    run = codex.run(codex.invocation("workspace", model=model, effort="high"))
    assert run.returncode == 0, run.output
    assert (codex.workdir / "app" / "x.py").read_text() == "print('hi')\n"
    assert (codex.workdir / "ran.txt").read_text() == "ok"
    assert committed(codex.workdir) == ["agent", "commit"]
    assert codex.platform.denials(run.output) == []
    assert codex.platform.reply_text(run.output) == "Wrote, ran and committed it."
    first = agent_requests(codex.server)[0].body
    assert (first["model"], first["reasoning"]["effort"]) == (model or "gpt-6.2-sol", "high")


@pytest.mark.parametrize("model", MODELS)
def test_workspace_refuses_writes_outside_the_workdir(
    codex: Codex, outside: Path, model: str | None
) -> None:
    touch = RunCommand(("touch", str(outside / "touched")))
    codex.script.push((WriteFile(str(outside / "x.py"), "no\n"), touch), Say("Could not."))
    run = codex.run(codex.invocation("workspace", model=model))
    assert run.returncode == 0, run.output
    assert list(outside.iterdir()) == []
    command = "" if model is None else f"{shlex.join(touch.argv)}: "
    assert codex.platform.denials(run.output) == [
        f"{outside / 'x.py'}: patch rejected: writing outside of the project; rejected by user "
        "approval settings",
        f"{command}touch: cannot touch '{outside / 'touched'}': Read-only file system",
    ]


@pytest.mark.parametrize("model", MODELS)
def test_read_only_writes_and_runs_nothing_and_says_so(codex: Codex, model: str | None) -> None:
    codex.script.push((WRITE, RUN), Say("I was not allowed."))
    run = codex.run(codex.invocation("read-only", model=model))
    assert run.returncode == 0, run.output
    assert sorted(path.name for path in codex.workdir.iterdir()) == [".git"]
    command = "" if model is None else f"{shlex.join(RUN.argv)}: "
    assert codex.platform.denials(run.output) == [
        "app/x.py: patch rejected: writing is blocked by read-only sandbox; rejected by user "
        "approval settings",
        f"{command}OSError: [Errno 30] Read-only file system: 'ran.txt'",
    ]


def test_full_writes_and_runs_anywhere(codex: Codex, outside: Path) -> None:
    touch = RunCommand(("touch", str(outside / "touched")))
    codex.script.push((WriteFile(str(outside / "x.py"), "yes\n"), touch), Say("Done."))
    run = codex.run(codex.invocation("full"))
    assert run.returncode == 0, run.output
    assert (outside / "x.py").read_text() == "yes\n"
    assert (outside / "touched").exists()
    assert codex.platform.denials(run.output) == []


@as_root_only
def test_workspace_and_full_as_another_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same argv run by ``nobody``, in a temp dir it owns (pytest's is root's alone)."""
    with (
        tempfile.TemporaryDirectory() as base,
        tempfile.TemporaryDirectory(dir="/var/tmp") as away,
        scripted_codex(Path(base), monkeypatch) as codex,
    ):
        for path in [Path(base), *Path(base).rglob("*"), Path(away)]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        codex.script.push((WRITE, RUN), (COMMIT,), Say("Done."))
        workspace = codex.run(codex.invocation("workspace"), user=AS_NOBODY)
        assert workspace.returncode == 0, workspace.output
        assert (codex.workdir / "ran.txt").read_text() == "ok"
        assert committed(codex.workdir) == ["agent", "commit"]
        assert codex.platform.denials(workspace.output) == []
        outside = Path(away) / "x.py"
        codex.script.push((WriteFile(str(outside), "yes\n"),), Say("Done."))
        full = codex.run(codex.invocation("full"), user=AS_NOBODY)
        assert full.returncode == 0, full.output
        assert outside.read_text() == "yes\n"


def test_doctor_checks_ask_the_cli_and_never_the_model(codex: Codex) -> None:
    """The version, who is signed in, whether each level's argv is accepted (fresh and
    resumed), and a warning when Codex cannot link its sandbox helper."""
    checks = codex.platform.cli_checks()
    pinned = json.loads((REPO / "package.json").read_text())["dependencies"]["@openai/codex"]
    assert pinned in checks.tested
    assert codex.run(Invocation(checks.version)).output.startswith(f"codex-cli {pinned}")
    assert checks.auth is not None and checks.signed_in is not None
    assert checks.signed_in(codex.run(Invocation(checks.auth)).output) is False  # a key in env
    login = Invocation([*checks.auth[:-1], "--with-api-key"], stdin="sk-canopy-login")
    assert codex.run(login).returncode == 0
    assert checks.signed_in(codex.run(Invocation(checks.auth)).output) is True
    assert checks.signed_in("Logged in using ChatGPT\n") is True  # 0.171's words, offline here
    assert checks.signed_in("error: unrecognized subcommand 'status'") is None
    for level in PERMISSION_LEVELS:
        for resume in (None, "01a24301-850b-7592-921b-f23dc201bc03"):
            argv = codex.invocation(level, resume=resume).argv
            assert checks.accepted.search(codex.run(Invocation(argv)).output), (level, resume)
    refused = codex.run(Invocation([*argv[:-1], "--sandbox", "none", "-"]))
    assert refused.returncode == 2 and not checks.accepted.search(refused.output)
    [(no_links, _)] = checks.warnings
    assert not no_links.search(codex.run(Invocation(argv)).output)
    under_temp = codex.run(Invocation(argv), env={"TMPDIR": str(codex.home)})
    assert no_links.search(under_temp.output) and checks.accepted.search(under_temp.output)
    assert codex.server.requests == []


# ---------------------------------------------------------------------- threads


def test_the_thread_is_resumed_with_its_first_turn_and_its_permissions(codex: Codex) -> None:
    codex.script.push(Say("First answer."))
    first = codex.run(codex.invocation(prompt="First question?"))
    assert first.returncode == 0, first.output
    [thread] = thread_ids(first)
    assert [c.conversation_id for c in codex.platform.conversations(codex.workdir)] == [thread]
    asked = len(agent_requests(codex.server))
    codex.script.push((WRITE,), Say("Second answer."))
    second = codex.run(codex.invocation(resume=thread, prompt="Now write it."))
    assert second.returncode == 0, second.output
    assert thread_ids(second) == {thread}
    resumed = input_texts(agent_requests(codex.server)[asked])
    assert "First question?" in resumed and "First answer." in resumed
    assert (codex.workdir / "app" / "x.py").read_text() == "print('hi')\n"
    assert codex.platform.denials(second.output) == []


# ------------------------------------------------------------- limits and retries


def test_subscription_limit_resets_when_the_body_says(codex: Codex) -> None:
    codex.script.push(Limit("subscription", reset_seconds=3600))
    started = datetime.now(UTC)
    run = codex.run(codex.invocation())
    assert run.returncode == 1, run.output
    limit = codex.platform.usage_limit(run.output, started)
    assert limit is not None and limit.kind == "usage", run.output
    assert limit.message.startswith("You\u2019ve hit your usage limit.")
    assert limit.reset_at is not None
    assert abs(limit.reset_at - (started + timedelta(hours=1))) < timedelta(minutes=1)


def test_api_key_rate_limit_is_a_rate_limit_after_codex_retried_it(codex: Codex) -> None:
    codex.script.push(Limit("api_rate", reset_seconds=1))
    run = codex.run(codex.invocation())
    assert run.returncode == 1, run.output
    limit = codex.platform.usage_limit(run.output, datetime.now(UTC))
    assert limit == UsageLimit(
        None, "exceeded retry limit, last status: 429 Too Many Requests", "rate"
    )
    notices = [n for n in map(codex.platform.retry_notice, run.output.splitlines()) if n]
    assert [n.message for n in notices] == [
        f"Reconnecting... {n}/5 (exceeded retry limit, last status: 429 Too Many Requests)"
        for n in range(1, 6)
    ]
    retries = [line for line in run.output.splitlines() if "Reconnecting" in line]
    assert not any(map(codex.platform.is_progress, retries))


def test_an_unreachable_model_is_retried_with_notices(codex: Codex) -> None:
    """Codex never gives up on a refused connection: it waits for the network forever."""
    codex.server.close()
    invocation = codex.invocation()
    process = codex.start(invocation)
    try:
        assert process.stdin is not None
        process.stdin.write(invocation.stdin or "")
        process.stdin.close()
        line = first_line_where(process, lambda line: codex.platform.retry_notice(line) is not None)
    finally:
        stop(process)
    notice = codex.platform.retry_notice(line)
    assert notice is not None and notice.wait is None
    assert notice.message.startswith("Reconnecting... waiting for network")
    assert not codex.platform.is_progress(line)


def first_line_where(process: subprocess.Popen[str], wanted: Any, timeout: float = 30) -> str:
    """The first output line ``wanted`` accepts, failing after ``timeout`` seconds."""
    assert process.stdout is not None
    seen: list[str] = []
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline = datetime.now(UTC) + timedelta(seconds=timeout)
        while (left := (deadline - datetime.now(UTC)).total_seconds()) > 0:
            if not selector.select(left):
                break
            line = process.stdout.readline()
            if not line:
                break
            if wanted(line):
                return line
            seen.append(line)
    pytest.fail(f"no such line within {timeout}s; saw:\n{''.join(seen)}")
