"""The real agent CLIs, driven by Canopy's graphs on the dev server, with Canopy's defaults.

Claude Code, Codex and Gemini CLI as package.json pins them, each against its scripted
model (:mod:`tests.real_agents`): only the model is fake. With nothing set but a platform
and a prompt, they prove what an overnight queue needs:

- the agent's file write lands and the program it runs runs (``workspace``, the default);
- under ``read-only`` nothing lands, and the denials are recorded on the node run and shown
  by ``graph info``, MCP ``graph get`` (the same JSON) and the run's Temporal UI details;
  ``on_denial: fail`` fails the node;
- grouped specs resume one real session;
- each vendor's limit answer waits for the vendor's reset (a plan's window) or a short
  backoff (an API key's rate limit), and Gemini CLI's hours-long sleep inside itself is
  cut short, so an ensemble fails over to its next member, whose work lands;
- an agent hook and an interactive session turn run the real CLIs too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.ops import control, graphs, queues, runs, sessions, specs
from canopy.ops.graph_info import GraphInfo, NodeRunInfo
from canopy.ops.session_wake import send_message, wait_for_delivery
from canopy.store.engine import Store, open_store
from tests.conftest import body
from tests.daemons import Daemons
from tests.engine import eventually, make_graph, settle, temporal
from tests.model_server.core import RUN, WRITE, Limit, RunCommand, Say, WriteFile
from tests.real_agents import RealAgents, real_agents
from tests.test_crash import daemons as daemons

pytestmark = pytest.mark.server

PLATFORMS = ("claude", "codex", "gemini")
TIMEOUT = 90.0


@pytest.fixture
def agents(
    canopy_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RealAgents]:
    with real_agents(canopy_home, tmp_path / "cli-home", monkeypatch.setenv) as found:
        yield found


def agent_node(platform: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": "implement",
        "platform": platform,
        "prompt": "Implement {{spec_name}}.",
        **fields,
    }


def spec(store: Store, name: str = "alpha") -> str:
    spec_id: str = specs.spec_create(store, name, body(f"{name} summary"))["id"]
    return spec_id


def waiting(store: Store, graph: str) -> GraphInfo | None:
    """The graph's info once its run waits out a usage limit."""
    found = graphs.graph_info(store, graph)
    return found if found.scheduled_resume_at else None


def node_runs(store: Store, graph: str) -> list[NodeRunInfo]:
    return graphs.graph_info(store, graph).node_runs


# ---------------------------------------------------------------------------- the defaults


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_with_canopys_defaults_the_agents_work_lands(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path, platform: str
) -> None:
    agents.scripts[platform].push((WRITE, RUN), Say("Wrote and ran it."))
    graph = make_graph(home_store, repo, [agent_node(platform)], specs=[spec(home_store)])
    settled = await settle(serving, home_store, graph)
    assert settled["status"] == "completed", settled
    assert (repo / "app" / "x.py").read_text() == "print('hi')\n"
    assert (repo / "ran.txt").read_text() == "ok"
    (ran,) = node_runs(home_store, graph)
    assert (ran.status, ran.platform, ran.denial_count, ran.denials) == (
        "succeeded", platform, 0, None
    )  # fmt: skip


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_read_only_lands_nothing_and_its_denials_are_shown(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path, platform: str
) -> None:
    agents.scripts[platform].push((WRITE, RUN), Say("I was not allowed."))
    graph = make_graph(
        home_store, repo, [agent_node(platform)], specs=[spec(home_store)], permissions="read-only"
    )
    settled = await settle(serving, home_store, graph)
    assert settled["status"] == "completed", settled  # on_denial: warn, the default
    assert not (repo / "app").exists() and not (repo / "ran.txt").exists()
    info = graphs.graph_info(home_store, graph)
    (ran,) = info.node_runs
    assert ran.status == "succeeded" and ran.denial_count == 2, ran
    assert ran.denials is not None and "x.py" in ran.denials[0] and "ran.txt" in ran.denials[1]
    shown = info.as_json()["node_runs"][0]  # graph info --json and MCP graph get
    assert (shown["denial_count"], shown["denials"]) == (2, ran.denials)
    assert ran.denied() == f"2: {ran.denials[0]}"  # graph info's and the TUI's column
    details = await temporal(
        serving, "workflow", "metadata", "--workflow-id", settled["workflow_id"]
    )
    assert "2 permission denials" in details

    agents.scripts[platform].push((WRITE,), Say("Not allowed again."))
    strict = make_graph(
        home_store,
        repo,
        [agent_node(platform, on_denial="fail")],
        name="strict",
        specs=[spec(home_store, "beta")],
        permissions="read-only",
    )
    failed = await settle(serving, home_store, strict)
    assert failed["status"] == "failed", failed
    (refused,) = node_runs(home_store, strict)
    assert refused.status == "failed" and "the agent was refused 1 action" in (refused.error or "")


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_grouped_specs_resume_one_real_session(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path, platform: str
) -> None:
    agents.scripts[platform].push(Say("Alpha is done."), Say("Beta is done."))
    queue = queues.queue_create(home_store, "q")["id"]
    for name in ("alpha", "beta"):
        queues.queue_add_spec(home_store, queue, spec(home_store, name), group="auth")
    graph = make_graph(home_store, repo, [agent_node(platform)])
    settled = await settle(serving, home_store, graph, queue=queue)
    assert settled["status"] == "completed", settled
    first, second = node_runs(home_store, graph)
    assert first.harness_session_id is not None
    assert second.harness_session_id == first.harness_session_id
    last = json.dumps(agents.requests(platform)[-1].body)
    assert (
        last.index("Implement alpha") < last.index("Alpha is done.") < last.index("Implement beta")
    )


# ------------------------------------------------------------------------------ limits


@pytest.mark.parametrize(
    ("platform", "limit", "wait", "env"),
    [
        ("claude", Limit("subscription", 3 * 3600), timedelta(hours=3),
         {"CLAUDE_CODE_OAUTH_TOKEN": "scripted-key", "ANTHROPIC_API_KEY": ""}),
        ("claude", Limit("api_rate"), timedelta(minutes=1), {}),
        ("codex", Limit("subscription", 3 * 3600), timedelta(hours=3), {}),
        ("gemini", Limit("daily_quota", 2 * 3600), timedelta(hours=2), {}),
        ("gemini", Limit("api_rate"), timedelta(minutes=1), {}),
    ],
    ids=["claude-plan", "claude-api-key", "codex-plan", "gemini-daily", "gemini-rate"],
)  # fmt: skip
async def test_a_limit_waits_for_the_vendors_reset_or_a_short_backoff(
    serving: Client,
    canopy_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    home_store: Store,
    repo: Path,
    platform: str,
    limit: Limit,
    wait: timedelta,
    env: dict[str, str],
) -> None:
    with real_agents(canopy_home, tmp_path / "cli-home", monkeypatch.setenv, env) as agents:
        agents.scripts[platform].push(limit)
        graph = make_graph(home_store, repo, [agent_node(platform)], specs=[spec(home_store)])
        await runs.graph_run(home_store, graph)
        asked = datetime.now(UTC)
        info = await eventually(lambda: waiting(home_store, graph), "the limit's wait", TIMEOUT)
        (ran,) = info.node_runs
        assert ran.status == "limit_blocked", ran
        resume_at = datetime.fromisoformat(str(info.scheduled_resume_at).replace("Z", "+00:00"))
        assert abs(resume_at - (asked + wait)) < timedelta(minutes=1), (resume_at, ran.error)
        await control.graph_stop(home_store, graph)


async def test_a_sleeping_gemini_is_cut_short_and_the_ensemble_fails_over(
    serving: Client, agents: RealAgents, cli_home_settings: None, home_store: Store, repo: Path
) -> None:
    """Gemini CLI sleeps inside itself until its capacity resets (two hours here); Canopy
    stops it at its announcement and hands the node to the ensemble's next member."""
    agents.scripts["gemini"].push(Limit("capacity", 2 * 3600))
    agents.scripts["claude"].push((WRITE,), Say("Wrote it."))
    node = {"name": "implement", "ensemble": "pair", "prompt": "Implement {{spec_name}}."}
    pair = [{"platform": "gemini"}, {"platform": "claude"}]
    graph = make_graph(home_store, repo, [node], specs=[spec(home_store)], ensembles={"pair": pair})
    settled = await settle(serving, home_store, graph)
    assert settled["status"] == "completed", settled
    assert (repo / "app" / "x.py").read_text() == "print('hi')\n"
    limited, worked = node_runs(home_store, graph)
    assert (limited.platform, limited.status) == ("gemini", "limit_blocked")
    assert "exhausted your capacity" in (limited.error or ""), limited.error
    assert (worked.platform, worked.status) == ("claude", "succeeded")


@pytest.fixture
def cli_home_settings(agents: RealAgents, tmp_path: Path) -> None:
    """Gemini CLI with its own retry policy (no attempt cap): it sleeps out capacity."""
    settings = tmp_path / "cli-home" / ".gemini" / "settings.json"
    loaded = json.loads(settings.read_text())
    loaded.pop("general", None)
    settings.write_text(json.dumps(loaded))


# ------------------------------------------------------------------- hooks and sessions


async def test_an_agent_hook_runs_the_real_cli(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path
) -> None:
    agents.scripts["gemini"].push((WriteFile("DONE.md", "all done\n"),), Say("Noted."))
    hook = {"platform": "gemini", "prompt": "Write DONE.md for {{graph_name}}."}
    node = {"name": "check", "command": "true"}
    graph = make_graph(
        home_store, repo, [node], specs=[spec(home_store)], hooks={"on_completed": [hook]}
    )
    settled = await settle(serving, home_store, graph)
    assert settled["status"] == "completed", settled
    (hook_run,) = graphs.graph_info(home_store, graph).completion_hook_runs
    assert (hook_run.status, hook_run.platform) == ("succeeded", "gemini"), hook_run
    assert (repo / "DONE.md").read_text() == "all done\n"


async def test_an_interactive_session_turn_runs_the_real_cli(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path
) -> None:
    agents.scripts["claude"].push((WriteFile("notes.md", "a note\n"),), Say("Noted it."))
    sessions.session_new(home_store, "claude", name="pair", workdir=str(repo))
    sent = await send_message(home_store, "pair", "Write a note.")
    delivered = await wait_for_delivery(home_store, sent["id"], TIMEOUT)
    assert delivered["status"] == "delivered", delivered
    assert delivered["delivery"]["reply"] == "Noted it."
    assert (repo / "notes.md").read_text() == "a note\n"


# ---------------------------------------------------------------------------- crashes

HOLD = RunCommand(
    (
        "python3",
        "-c",
        "import os, time\n"
        "open('holding', 'w').close()\n"
        "while not os.path.exists('gate'):\n"
        "    time.sleep(0.05)\n"
        "open('ran.txt', 'a').write('x')\n",
    )
)
"""A program that waits, mid-run, for the test to open its gate: the real CLI is busy."""


async def test_a_worker_killed_while_a_real_cli_runs_adopts_it_and_it_runs_once(
    daemons: Daemons, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path
) -> None:
    store = open_store()
    with real_agents(daemons.home, tmp_path / "cli-home", monkeypatch.setenv) as agents:
        agents.scripts["claude"].push((HOLD,), Say("Done."))
        graph = make_graph(store, repo, [agent_node("claude")], specs=[spec(store)])
        daemons.start_worker()
        await runs.graph_run(store, graph)
        await eventually(lambda: (repo / "holding").exists(), "the agent's program to run", TIMEOUT)
        daemons.kill_worker()
        daemons.start_worker()
        (repo / "gate").touch()
        settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert (repo / "ran.txt").read_text() == "x"
    (ran,) = node_runs(store, graph)
    assert ran.status == "succeeded"
    log = Path(str(ran.log_path)).read_text()
    launches = [line for line in log.splitlines() if '"subtype":"init"' in line]
    assert len(launches) == 1, "the new worker adopted the running CLI; it never relaunched it"
    assert not list(Path(str(ran.log_path)).parent.glob("started.lost-*"))


async def test_a_cli_that_only_reconnects_is_stopped_as_unable_to_reach_its_api(
    serving: Client, agents: RealAgents, home_store: Store, repo: Path
) -> None:
    """Codex with its API gone prints ``Reconnecting...`` forever: output, but no progress."""
    agents.servers["codex"].close()
    node = agent_node("codex", stall_minutes=0.1)
    graph = make_graph(home_store, repo, [node], specs=[spec(home_store)])
    settled = await settle(serving, home_store, graph)
    assert settled["status"] == "failed", settled
    (ran,) = node_runs(home_store, graph)
    assert ran.status == "stalled", ran
    assert "could not reach its API: it printed only retry notices for 0.1 minutes" in (
        ran.error or ""
    ), ran.error
    assert "Reconnecting..." in (ran.error or "")
