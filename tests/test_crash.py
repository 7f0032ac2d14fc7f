"""Crash resilience: a SIGKILLed worker and a restarted dev server.

These run the daemon the way users do — ``canopy server start`` (persisted to a db file)
and ``python worker.py`` as real processes — and kill them mid-run. The run must still
finish with every spec completed exactly once.
"""

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from canopy.ops import graphs, queues, runs, sessions, specs
from canopy.ops.session_wake import send_message, wait_for_delivery
from canopy.sessions.transcripts import read_turns
from canopy.store.engine import Store, open_store
from canopy.temporal import client as temporal_client
from tests.conftest import body
from tests.daemons import TIMEOUT, Daemons
from tests.engine import FAKE_AGENT, agent_runs, eventually, fake_node, file_lines, git, node_run_of

pytestmark = pytest.mark.server
HEARTBEAT_TIMEOUT = 2


@pytest.fixture
def daemons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    """A data dir with the fake agent configured, a running server, and cleanup."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'[platforms.claude]\nexecutable = "{FAKE_AGENT}"\n')
    monkeypatch.setenv("CANOPY_HOME", str(home))
    monkeypatch.setenv("FAKE_AGENT_RECORD", str(tmp_path / "agent-record.jsonl"))
    monkeypatch.setenv("CANOPY_HEARTBEAT_TIMEOUT", str(HEARTBEAT_TIMEOUT))
    for name in ("CANOPY_DB_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    running = Daemons(home)
    running.start_server()
    try:
        yield running
    finally:
        running.stop()


def setup_queue_run(store: Store, repo: Path, sleep: float) -> tuple[str, list[str]]:
    """Two queued specs and a one-node graph whose agent sleeps, then commits."""
    ids = [specs.spec_create(store, n, body(f"{n} summary"))["id"] for n in ("alpha", "beta")]
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in ids:
        queues.queue_add_spec(store, queue, spec_id)
    node = fake_node(
        "implement",
        f"FAKE: sleep {sleep}\nFAKE: write out/{{{{spec_id}}}}.txt done\n"
        "FAKE: commit implement {{spec_id}}",
    )
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": [node]})
    return graph["id"], ids


def implement_commits(repo: Path) -> list[str]:
    return [line for line in git(repo, "log", "--format=%s").splitlines() if "implement" in line]


def completed_passages(store: Store, run_id: str) -> list[str]:
    with store.transaction() as rows:
        found = rows(
            "SELECT spec_id FROM run_specs WHERE run_id = :run_id AND outcome = 'completed'"
            " ORDER BY id",
            {"run_id": run_id},
        )
    return [row["spec_id"] for row in found]


async def heartbeat_carrying(workflow_id: str, session_id: str) -> None:
    """Wait until Temporal holds a heartbeat of the running node naming ``session_id``."""
    client = await temporal_client.connect()
    handle = client.get_workflow_handle(workflow_id)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        description = await handle.describe()
        for pending in description.raw_description.pending_activities:
            details = await client.data_converter.decode(pending.heartbeat_details.payloads)
            if details and details[0].get("session_id") == session_id:
                return
        await asyncio.sleep(0.1)
    pytest.fail("timed out waiting for the node's heartbeat to carry the session id")


async def test_a_sigkilled_worker_is_replaced_and_the_running_agent_adopted(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    graph, (alpha, beta) = setup_queue_run(store, repo, sleep=3)
    daemons.start_worker()
    started = await runs.graph_run(store, graph, queue="q")
    record = tmp_path / "agent-record.jsonl"
    await eventually(
        lambda: node_run_of(store, alpha, "running") and agent_runs(record),
        "alpha's agent to start",
        TIMEOUT,
    )
    first_session = agent_runs(record)[0]["session_id"]
    await heartbeat_carrying(started["workflow_id"], first_session)
    daemons.kill_worker()
    daemons.start_worker()
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert completed_passages(store, started["run_id"]) == [alpha, beta]
    assert sorted(implement_commits(repo)) == sorted(f"implement {s}" for s in (alpha, beta))
    alpha_launches = [r for r in agent_runs(record) if alpha in r["prompt"]]
    assert len(alpha_launches) == 1, "the retry adopts the running agent, never relaunches it"
    assert node_runs_of(store, alpha) == [("succeeded", first_session)]


async def test_a_restarted_dev_server_keeps_the_run_going(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    graph, (alpha, beta) = setup_queue_run(store, repo, sleep=2)
    daemons.start_worker()
    started = await runs.graph_run(store, graph, queue="q")
    await eventually(lambda: node_run_of(store, alpha, "running"), "alpha's node to start", TIMEOUT)
    daemons.stop_server()
    daemons.start_server()
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert completed_passages(store, started["run_id"]) == [alpha, beta]


async def test_a_worker_killed_during_a_delivery_delivers_the_message_exactly_once(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    session = sessions.session_new(store, "claude", name="pair", workdir=str(repo))
    daemons.start_worker()
    sent = await send_message(store, "pair", "FAKE: sleep 4\nFAKE: write out.txt delivered")
    record = tmp_path / "agent-record.jsonl"
    await eventually(lambda: agent_runs(record), "the turn to start", TIMEOUT)
    daemons.kill_worker()
    daemons.start_worker()
    settled = await wait_for_delivery(store, sent["id"], TIMEOUT)
    assert settled["status"] == "delivered", settled
    assert settled["delivery"]["attempts"] == 1
    assert len(agent_runs(record)) == 1, "the prompt reached the harness once"
    assert (repo / "out.txt").read_text() == "delivered\n"
    turns = read_turns(Path(session["transcript_path"]))
    assert [(t["message_id"], t["status"]) for t in turns] == [(sent["id"], "delivered")]


async def test_a_restarted_dev_server_keeps_delivering(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    sessions.session_new(store, "claude", name="pair", workdir=str(repo))
    daemons.start_worker()
    first = await send_message(store, "pair", "FAKE: sleep 2\nFAKE: say first")
    record = tmp_path / "agent-record.jsonl"
    await eventually(lambda: agent_runs(record), "the first turn to start", TIMEOUT)
    second = sessions.session_send(store, "pair", "FAKE: say second")
    daemons.stop_server()
    daemons.start_server()
    for message in (first, second):
        settled = await wait_for_delivery(store, message["id"], TIMEOUT)
        assert (settled["status"], settled["delivery"]["attempts"]) == ("delivered", 1)
    assert [run["prompt"] for run in agent_runs(record)] == [first["prompt"], second["prompt"]]


# ------------------------------------------------- exactly once under server outages


def node_runs_of(store: Store, spec_id: str) -> list[tuple[str, str | None]]:
    """(status, harness session) of each node run of ``spec_id``, oldest first."""
    with store.transaction() as rows:
        found = rows(
            "SELECT status, harness_session_id FROM node_runs WHERE spec_id = :spec_id ORDER BY id",
            {"spec_id": spec_id},
        )
    return [(row["status"], row["harness_session_id"]) for row in found]


def command_graph(store: Store, repo: Path, command: str) -> tuple[str, str]:
    """One bound spec and a graph whose only node is ``command``; (graph id, spec id)."""
    spec = specs.spec_create(store, "alpha", body("alpha summary"))["id"]
    graph = graphs.graph_create(
        store,
        {
            "name": "g",
            "workdir": str(repo),
            "nodes": [{"name": "effect", "command": command}],
            "specs": [spec],
        },
    )
    return graph["id"], spec


def gated_command(effect: Path, gate: Path) -> str:
    """A command that records its start, waits for ``gate``, then records its end."""
    return (
        f"echo start >> {effect}; while [ ! -e {gate} ]; do sleep 0.05; done; echo end >> {effect}"
    )


@pytest.mark.parametrize(
    "finished_during_outage",
    [True, False],
    ids=["node-finished-while-the-server-was-down", "node-still-running-after-the-outage"],
)
async def test_a_server_outage_neither_kills_nor_repeats_a_node(
    finished_during_outage: bool, daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    """kill -9 of the server for longer than the heartbeat timeout: a node that finished
    meanwhile is not run again, and one still running is neither killed nor restarted."""
    store = open_store()
    effect, gate = tmp_path / "effect", tmp_path / "gate"
    graph, spec = command_graph(store, repo, gated_command(effect, gate))
    daemons.start_worker()
    await runs.graph_run(store, graph)
    await eventually(lambda: file_lines(effect) == ["start"], "the node to start", TIMEOUT)
    daemons.kill_server()
    if finished_during_outage:
        gate.touch()
        await eventually(lambda: file_lines(effect) == ["start", "end"], "the node to end", TIMEOUT)
    # not a synchronisation: the outage itself, outlasting the heartbeat timeout
    await asyncio.sleep(3 * HEARTBEAT_TIMEOUT)
    daemons.start_server()
    gate.touch()
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert file_lines(effect) == ["start", "end"], "the command ran once, to its end"
    assert [status for status, _ in node_runs_of(store, spec)] == ["succeeded"]


# ------------------------------------------------------- hooks interrupted by a crash


def hook_runs(store: Store) -> list[tuple[str, str | None]]:
    """(status, error) of every hook run, oldest first."""
    with store.transaction() as rows:
        found = rows("SELECT status, error FROM hook_runs ORDER BY id", {})
    return [(row["status"], row["error"]) for row in found]


@pytest.mark.parametrize("mode", ["command", "agent"])
async def test_a_hook_interrupted_by_a_worker_crash_completes_once(
    mode: str, daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    effect, gate = tmp_path / "effect", tmp_path / "gate"
    graph, _spec = command_graph(store, repo, "true")
    hook: dict[str, object] = (
        {"command": gated_command(effect, gate)}
        if mode == "command"
        else {
            "platform": "claude",
            "prompt": f"FAKE: append {effect} start\nFAKE: sleep 3\nFAKE: append {effect} end",
        }
    )
    graphs.graph_edit(store, graph, {"hooks": {"on_completed": [hook]}})
    daemons.start_worker()
    await runs.graph_run(store, graph)
    await eventually(lambda: file_lines(effect) == ["start"], "the hook to start", TIMEOUT)
    daemons.kill_worker()
    gate.touch()
    daemons.start_worker()
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert file_lines(effect) == ["start", "end"], "the hook ran once, to its end"
    assert hook_runs(store) == [("succeeded", None)]
