"""The real Claude Code CLI, launched with the argv Canopy builds, against a scripted model.

Each test runs the pinned ``claude`` (package.json) exactly as a node run does, argv and
stdin from :meth:`ClaudePlatform.build_invocation`, in a fresh git repo and an isolated
home, inside a network namespace where only the scripted Anthropic API on 127.0.0.1 is
reachable (:mod:`tests.model_server`). Only the model is fake: the tools, the permission
checks, the session files and the limit handling are Claude Code's own. They prove:

- the effort values Canopy knows are the ones the CLI takes, and ``canopy doctor``'s
  checks (version, who is signed in, each level's argv accepted) ask the CLI, never the
  model;
- ``workspace`` lets the agent write files and run any program in the workdir, as root
  too, and refuses file edits outside it; ``read-only`` lets nothing be written or run,
  and :meth:`denials` names each refusal; ``full`` runs unrestricted where the CLI
  allows it, and as root the CLI really refuses it without ``IS_SANDBOX=1``;
- the ``--session-id`` Canopy chooses is the session the output announces, and resuming
  it sends the first turn back to the model;
- a subscription's 429 is a usage limit resetting when the headers say, an API key's 429
  a rate limit with no reset, and the CLI's own retries are retry notices.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from canopy.errors import Refused
from canopy.permissions import PERMISSION_LEVELS, Permissions
from canopy.platforms import Invocation, UsageLimit
from canopy.platforms.claude import EFFORTS, ClaudePlatform
from tests.model_server.anthropic import AnthropicAPI, cli_env
from tests.model_server.clis import REPO, cli_path, isolated_home
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
)

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
as_root_only = pytest.mark.skipif(os.geteuid() != 0, reason="checks what Claude Code does as root")


@dataclass
class Run:
    """One finished CLI run: its exit status and output (stdout, then stderr)."""

    returncode: int
    output: str


@dataclass
class Claude:
    """The real CLI against a scripted server, in ``workdir`` with its own ``home``."""

    network: LoopbackOnly
    server: ModelServer
    script: Script
    workdir: Path
    home: Path

    def platform(self, *, bypass_refused: bool = True) -> ClaudePlatform:
        return ClaudePlatform(executable=(str(cli_path("claude")),), bypass_refused=bypass_refused)

    def invocation(
        self,
        permissions: Permissions = "workspace",
        *,
        session_id: str | None = None,
        resume: str | None = None,
        effort: str | None = None,
        platform: ClaudePlatform | None = None,
        prompt: str = "Do the task.",
    ) -> Invocation:
        return (platform or self.platform()).build_invocation(
            prompt,
            model=None,
            effort=effort,
            resume_session_id=resume,
            permissions=permissions,
            session_id=session_id,
        )

    def run(
        self,
        invocation: Invocation,
        *,
        subscription: bool = False,
        retries: int = 0,
        env: dict[str, str] | None = None,
        user: list[str] | None = None,
    ) -> Run:
        """Run to the end (``retries``: the CLI's own API retries; ``user``: an argv prefix
        that drops to another user)."""
        environment = {
            **os.environ,
            **cli_env(self.server, self.home, subscription=subscription),
            "CLAUDE_CODE_MAX_RETRIES": str(retries),
            **(env or {}),
        }
        done = subprocess.run(
            [*self.network.prefix(), *(user or []), *invocation.argv],
            input=invocation.stdin,
            env=environment,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Run(done.returncode, done.stdout + done.stderr)


@contextmanager
def scripted_claude(base: Path, *, owner: int | None = None) -> Iterator[Claude]:
    """A git workdir and a home under ``base`` (given to ``owner``), and a scripted server."""
    script = Script()
    workdir, home = base / "work", base / "home"
    workdir.mkdir()
    subprocess.run(["git", "init", "--quiet", str(workdir)], check=True)
    isolated_home(home)
    if owner is not None:
        for path in [base, *base.rglob("*")]:
            os.chown(path, owner, owner, follow_symlinks=False)
    with loopback_only() as network, ModelServer(AnthropicAPI(script), network) as server:
        yield Claude(network, server, script, workdir, home)


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[Claude]:
    with scripted_claude(tmp_path) as claude:
        yield claude


@pytest.fixture
def nobodys_claude() -> Iterator[Claude]:
    """For runs as ``nobody``: in a temp dir it owns (pytest's is root's alone)."""
    with tempfile.TemporaryDirectory() as base, scripted_claude(Path(base), owner=NOBODY) as claude:
        yield claude


def session_ids(run: Run) -> set[str]:
    platform = ClaudePlatform()
    return {
        found for line in run.output.splitlines() if (found := platform.session_id_from_line(line))
    }


def agent_requests(server: ModelServer) -> list[Request]:
    return [r for r in server.requests if r.method == "POST" and isinstance(r.body, dict)]


# ------------------------------------------------------------------------ permissions


def test_workspace_writes_files_and_runs_any_program(claude: Claude) -> None:
    claude.script.push((WRITE, RUN), Say("Wrote and ran it."))
    chosen = str(uuid.uuid4())
    run = claude.run(claude.invocation("workspace", session_id=chosen, effort="xhigh"))
    assert run.returncode == 0, run.output
    assert (claude.workdir / "app" / "x.py").read_text() == "print('hi')\n"
    assert (claude.workdir / "ran.txt").read_text() == "ok"
    platform = claude.platform()
    assert platform.denials(run.output) == []
    assert platform.reply_text(run.output) == "Wrote and ran it."
    assert session_ids(run) == {chosen}
    assert agent_requests(claude.server)[0].body["output_config"] == {"effort": "xhigh"}


def test_workspace_refuses_file_edits_outside_the_workdir(claude: Claude, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    claude.script.push((WriteFile(str(outside), "no\n"),), Say("Could not."))
    run = claude.run(claude.invocation("workspace"))
    assert run.returncode == 0, run.output
    assert not outside.exists()
    assert claude.platform().denials(run.output) == [f"Write {outside}"]


def test_read_only_writes_and_runs_nothing_and_says_so(claude: Claude) -> None:
    claude.script.push((WRITE, RUN), Say("I was not allowed."))
    run = claude.run(claude.invocation("read-only"))
    assert run.returncode == 0, run.output
    assert sorted(p.name for p in claude.workdir.iterdir()) == [".git"]
    assert claude.platform().denials(run.output) == [
        "Write app/x.py",
        "Bash: python3 -c 'open('\"'\"'ran.txt'\"'\"', '\"'\"'w'\"'\"').write('\"'\"'ok'\"'\"')'",
    ]


@as_root_only
def test_full_is_refused_as_root_because_the_cli_refuses_it(claude: Claude) -> None:
    with pytest.raises(Refused, match="IS_SANDBOX=1"):
        claude.invocation("full")
    unguarded = claude.invocation("full", platform=claude.platform(bypass_refused=False))
    run = claude.run(unguarded)
    assert run.returncode == 1
    assert "cannot be used with root/sudo privileges" in run.output


def test_full_writes_anywhere_where_the_cli_allows_it(claude: Claude, tmp_path: Path) -> None:
    """Root declaring a sandbox (``IS_SANDBOX=1``), as any other user does without it."""
    outside = tmp_path / "outside.txt"
    claude.script.push((WriteFile(str(outside), "yes\n"), RUN), Say("Done."))
    platform = claude.platform(bypass_refused=False)
    run = claude.run(claude.invocation("full", platform=platform), env={"IS_SANDBOX": "1"})
    assert run.returncode == 0, run.output
    assert outside.read_text() == "yes\n"
    assert (claude.workdir / "ran.txt").read_text() == "ok"
    assert platform.denials(run.output) == []


@as_root_only
def test_workspace_and_full_as_another_user(nobodys_claude: Claude) -> None:
    """The non-root argv, run by ``nobody``: the same ``workspace``, and ``full`` unguarded."""
    claude = nobodys_claude
    claude.script.push((WRITE, RUN), Say("Done."))
    workspace = claude.run(claude.invocation("workspace"), user=AS_NOBODY)
    assert workspace.returncode == 0, workspace.output
    assert (claude.workdir / "ran.txt").read_text() == "ok"
    outside = claude.home / "outside.txt"
    claude.script.push((WriteFile(str(outside), "yes\n"),), Say("Done."))
    platform = claude.platform(bypass_refused=False)
    full = claude.run(claude.invocation("full", platform=platform), user=AS_NOBODY)
    assert full.returncode == 0, full.output
    assert outside.read_text() == "yes\n"


def test_the_effort_values_are_the_clis(tmp_path: Path) -> None:
    """``claude --help`` lists exactly them (the workspace test sends one to the model)."""
    shown = subprocess.run(
        [str(cli_path("claude")), "--help"],
        env={**os.environ, **isolated_home(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"({', '.join(EFFORTS)})" in " ".join(shown.split())


def test_doctor_checks_ask_the_cli_and_never_the_model(claude: Claude) -> None:
    """The version, who is signed in, and whether each level's argv is accepted."""
    checks = claude.platform(bypass_refused=False).cli_checks()
    assert checks is not None
    assert (
        json.loads((REPO / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]
        in checks.tested
    )
    assert claude.run(Invocation(checks.version)).output.startswith(f"{checks.tested[0]} ")
    assert checks.auth is not None and checks.signed_in is not None
    assert checks.signed_in(claude.run(Invocation(checks.auth)).output) is True
    signed_out = claude.run(Invocation(checks.auth), env={"ANTHROPIC_API_KEY": ""})
    assert checks.signed_in(signed_out.output) is False
    assert checks.signed_in("error: unknown command 'auth'") is None
    sandbox = {"IS_SANDBOX": "1"}  # root may run full only so, anyone else always
    for level in PERMISSION_LEVELS:
        argv = claude.invocation(level, platform=claude.platform(bypass_refused=False)).argv
        assert checks.accepted.search(claude.run(Invocation(argv), env=sandbox).output), level
    refused = claude.run(Invocation([*argv, "--permission-mode", "yolo"]))
    assert not checks.accepted.search(refused.output)
    assert claude.server.requests == []


# ------------------------------------------------------------------ sessions


def test_the_chosen_session_is_resumed_with_its_first_turn(claude: Claude) -> None:
    chosen = str(uuid.uuid4())
    claude.script.push(Say("First answer."))
    first = claude.run(claude.invocation(session_id=chosen, prompt="First question?"))
    assert first.returncode == 0, first.output
    assert session_ids(first) == {chosen}
    claude.script.push(Say("Second answer."))
    asked = len(agent_requests(claude.server))
    second = claude.run(claude.invocation(resume=chosen, prompt="Second question?"))
    assert second.returncode == 0, second.output
    assert session_ids(second) == {chosen}
    sent = json.dumps(agent_requests(claude.server)[asked].body["messages"])
    assert (
        sent.index("First question?") < sent.index("First answer.") < sent.index("Second question?")
    )


# ---------------------------------------------------------------------- limits


def test_subscription_limit_resets_when_the_headers_say(claude: Claude) -> None:
    claude.script.push(Limit("subscription", reset_seconds=3 * 3600))
    run = claude.run(claude.invocation(), subscription=True)
    now = datetime.now(UTC)
    limit = claude.platform().usage_limit(run.output, now)
    assert run.returncode == 1
    assert limit is not None and limit.kind == "usage" and limit.reset_at is not None
    assert abs(limit.reset_at - (now + timedelta(hours=3))) < timedelta(minutes=1)
    assert limit.message.startswith("You've hit your 5-hour limit · resets ")
    assert claude.platform().reply_text(run.output) is None


def test_api_key_rate_limit_is_a_rate_limit_without_reset(claude: Claude) -> None:
    claude.script.push(Limit("api_rate", reset_seconds=1))
    run = claude.run(claude.invocation())
    assert run.returncode == 1
    assert claude.platform().usage_limit(run.output, datetime.now(UTC)) == UsageLimit(
        None,
        "API Error: Request rejected (429) · This request would exceed your account's rate"
        " limit. Please try again later.",
        kind="rate",
    )
    assert claude.platform().reply_text(run.output) is None


def test_the_clis_own_retry_is_a_retry_notice(claude: Claude) -> None:
    claude.script.push(Limit("api_rate", reset_seconds=1, repeat=False), Say("Got through."))
    run = claude.run(claude.invocation(), retries=1)
    assert run.returncode == 0, run.output
    platform = claude.platform()
    notices = [n for n in map(platform.retry_notice, run.output.splitlines()) if n is not None]
    assert len(notices) == 1
    assert notices[0].message.startswith("Claude API call failed: rate_limit (HTTP 429); retry 1/1")
    assert notices[0].wait is not None and timedelta(0) < notices[0].wait < timedelta(minutes=1)
    assert platform.usage_limit(run.output, datetime.now(UTC)) is None
    assert platform.reply_text(run.output) == "Got through."


@pytest.mark.skipif(
    not (shutil.which("bwrap") and shutil.which("socat")),
    reason="Claude Code sandboxes commands with bubblewrap and socat (CI installs them)",
)
def test_workspace_commands_cannot_write_outside_the_workdir(
    claude: Claude, tmp_path: Path
) -> None:
    """Where the CLI can sandbox (Linux: bubblewrap and socat), workspace confines commands
    too, not only the file tools: a program writing outside the workdir is refused."""
    outside = tmp_path / "outside-by-command.txt"
    escape = RunCommand(("python3", "-c", f"open({str(outside)!r}, 'w').write('x')"))
    claude.script.push((escape, RUN), Say("Done."))
    run = claude.run(claude.invocation("workspace"))
    assert run.returncode == 0, run.output
    assert not outside.exists()
    assert (claude.workdir / "ran.txt").read_text() == "ok"
    assert "Sandbox disabled" not in run.output
