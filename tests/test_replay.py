"""Replay: GraphRunV2, SessionDelivery and ScheduledRun stay deterministic across code changes (and
continue-as-new works).

Each scenario runs on the real dev server; its fresh history is replayed against the
current workflow code, and the histories committed under ``tests/histories`` (recorded
from earlier code) must replay too. When a change to a workflow alters its history shape on
purpose, re-record with ``CANOPY_RECORD_HISTORIES=1 pytest tests/test_replay.py`` and
commit the new files with the change.
"""

import json
import os
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from canopy.contracts.session_delivery import session_workflow_id
from canopy.ops import control, graphs, queues, runs, schedules, sessions
from canopy.ops.session_wake import wait_for_delivery, wake_session
from canopy.paths import canopy_home
from canopy.store.engine import Store
from canopy.workflows.graph_run import GraphRunV2
from canopy.workflows.scheduled_run import ScheduledRun
from canopy.workflows.session_delivery import SessionDelivery
from tests.conftest import graph_state, make_specs
from tests.engine import FAKE_AGENT, eventually, fake_node, settle

pytestmark = pytest.mark.server
HISTORIES = Path(__file__).parent / "histories"
SETTLE_TIMEOUT = 60.0

Scenario = Callable[[Client, Store, Path], Awaitable[str]]
"""Sets up and runs one workflow; returns its workflow id once it settled."""
CHECK = {"name": "check", "command": "true"}


async def drain(client: Client, store: Store, repo: Path) -> str:
    """A queue of two specs through implement (agent) → check (command)."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta"):
        queues.queue_add_spec(store, queue, spec_id)
    implement = fake_node(
        "implement", "FAKE: write out/{{spec_id}}.txt done\nFAKE: commit implement {{spec_id}}"
    )
    check = {"name": "check", "command": "test -f out/{{spec_id}}.txt"}
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [implement, check]}
    )
    result = await settle(client, store, graph["id"], queue=queue)
    assert result["status"] == "completed"
    return str(result["workflow_id"])


async def settle_failed(client: Client, store: Store, repo: Path) -> str:
    """Bound specs; the first fails its only node, so the run settles failed."""
    bound = make_specs(store, "alpha", "beta")
    node = {"name": "check", "command": "exit 3"}
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [node], "specs": bound}
    )
    result = await settle(client, store, graph["id"])
    assert result["status"] == "failed"
    return str(result["workflow_id"])


async def continue_as_new(client: Client, store: Store, repo: Path) -> str:
    """Three queued specs with two specs per execution (see the test): one continue-as-new."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta", "gamma"):
        queues.queue_add_spec(store, queue, spec_id)
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": [CHECK]})
    result = await settle(client, store, graph["id"], queue=queue)
    assert result["status"] == "completed"
    info = graphs.graph_get(store, graph["id"])
    assert info["runs"][0]["summary"]["completed"] == 3, "counts carried across executions"
    return str(result["workflow_id"])


async def pass_over(client: Client, store: Store, repo: Path) -> str:
    """A run paused before a spec that another graph's run takes meanwhile: on continue it
    finds the spec claimed, passes it over and runs the next one."""
    w, x, y = make_specs(store, "w", "x", "y")
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in (w, x, y):
        queues.queue_add_spec(store, queue, spec_id)
    dirty_after_w = {"name": "work", "command": f"test {{{{spec_id}}}} != {w} || touch scratch.txt"}
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [dirty_after_w]}
    )["id"]
    started = await runs.graph_run(store, graph, queue=queue)

    def paused_before_x() -> bool:
        blocker = graph_state(store, graph)["blocker"] or {}
        return bool(blocker.get("next_spec", {}).get("id") == x)

    await eventually(paused_before_x, "a pause before x")
    other_queue = queues.queue_create(store, "other")["id"]
    queues.queue_add_spec(store, other_queue, x)
    other = graphs.graph_create(
        store,
        {"name": "h", "workdir": str(repo), "allow_dirty_start": True, "nodes": [CHECK]},
    )["id"]
    assert (await settle(client, store, other, queue=other_queue))["status"] == "completed"
    (repo / "scratch.txt").unlink()
    await control.graph_continue(store, graph)
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    info = graphs.graph_get(store, graph)
    assert [n["spec_id"] for n in info["node_runs"]] == [w, y], "x ran in the other run only"
    return str(started["workflow_id"])


async def ensemble_failover(client: Client, store: Store, repo: Path) -> str:
    """One spec through an ensemble node whose first member is usage-limited: the run
    fails over to the second member, which completes it."""
    (canopy_home() / "config.toml").write_text(
        f'[platforms.claude]\nexecutable = ["env", "FAKE_AGENT_DIRECTIVES=limit", "{FAKE_AGENT}"]\n'
        f'[platforms.codex]\nexecutable = "{FAKE_AGENT}"\n'
    )
    node = {"name": "implement", "ensemble": "team", "prompt": "FAKE: commit done"}
    graph = graphs.graph_create(
        store,
        {
            "name": "g",
            "workdir": str(repo),
            "nodes": [node],
            "ensembles": {"team": [{"platform": "claude"}, {"platform": "codex"}]},
            "specs": make_specs(store, "alpha"),
        },
    )
    result = await settle(client, store, graph["id"])
    assert result["status"] == "completed"
    info = graphs.graph_get(store, graph["id"])
    assert [(n["platform"], n["status"]) for n in info["node_runs"]] == [
        ("claude", "limit_blocked"),
        ("codex", "succeeded"),
    ]
    return str(result["workflow_id"])


async def pause_continue(client: Client, store: Store, repo: Path) -> str:
    """A pause requested while the first of two specs runs lands before the second;
    a continue then runs it."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta"):
        queues.queue_add_spec(store, queue, spec_id)
    release = repo.parent / "release"
    hold = {"name": "hold", "command": f"while [ ! -e {release} ]; do sleep 0.05; done"}
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": [hold]})
    started = await runs.graph_run(store, graph["id"], queue=queue)

    def node_running() -> bool:
        return any(
            n["status"] == "running" for n in graphs.graph_get(store, graph["id"])["node_runs"]
        )

    await eventually(node_running, "the first spec's node to run")
    await control.graph_pause(store, graph["id"])
    release.touch()
    paused = await runs.wait_until_settled(store, graph["id"], SETTLE_TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "paused"), paused
    await control.graph_continue(store, graph["id"])
    settled = await runs.wait_until_settled(store, graph["id"], SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    return str(started["workflow_id"])


async def pause_at_continue_as_new(client: Client, store: Store, repo: Path) -> str:
    """:func:`pause_continue` with one spec per execution (see the test): the pause comes
    while the execution's last spec runs, so the run parks before it continues as new."""
    return await pause_continue(client, store, repo)


async def budget_pause(client: Client, store: Store, repo: Path) -> str:
    """A queue of two specs with a budget the first spec's cost reaches: the run pauses
    before the second (``on_blocked`` fires), a continue while still over parks it again,
    and once the budget is raised a continue runs the second."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta"):
        queues.queue_add_spec(store, queue, spec_id)
    implement = fake_node("implement", "FAKE: usage 10 5 0 0.6\nFAKE: commit {{spec_id}}")
    blocked = {"on_blocked": [{"command": "true"}]}
    definition = {"name": "g", "workdir": str(repo), "nodes": [implement], "hooks": blocked}
    graph = graphs.graph_create(store, {**definition, "budget": {"run": {"usd": 0.5}}})["id"]
    started = await runs.graph_run(store, graph, queue=queue)
    paused = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "budget"), paused
    graphs.graph_edit(store, graph, {"budget": {"run": {"usd": 0.55}}})
    await control.graph_continue(store, graph, wait=0)

    def limit() -> object:
        return (graph_state(store, graph)["blocker"] or {}).get("limit")

    await eventually(lambda: limit() == 0.55, "the run parked again")
    graphs.graph_edit(store, graph, {"budget": {"run": {"usd": 5}}})
    await control.graph_continue(store, graph)
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    return str(started["workflow_id"])


async def session_delivery(client: Client, store: Store, repo: Path) -> str:
    """Two messages queued for a session, then one wake: both delivered in one execution."""
    session = sessions.session_new(store, "claude", name="pair", workdir=str(repo))
    queued = [sessions.session_send(store, "pair", prompt) for prompt in ("one", "two")]
    await wake_session(client, str(session["id"]))
    for message in queued:
        delivered = await wait_for_delivery(store, message["id"], SETTLE_TIMEOUT)
        assert delivered["status"] == "delivered"
    workflow_id = session_workflow_id(str(session["id"]))
    await client.get_workflow_handle(workflow_id).result()
    return workflow_id


async def scheduled_run(client: Client, store: Store, repo: Path) -> str:
    """A schedule fired once (triggered now): its ScheduledRun starts the graph's run."""
    graph = graphs.graph_create(
        store,
        {"name": "g", "workdir": str(repo), "nodes": [CHECK], "specs": make_specs(store, "a")},
    )
    created = await schedules.schedule_create(store, graph["id"], "@daily")
    handle = client.get_schedule_handle(created["temporal_id"])
    await handle.trigger()

    async def fired() -> str | None:
        actions = (await handle.describe()).info.recent_actions
        return getattr(actions[0].action, "workflow_id", None) if actions else None

    workflow_id = await eventually(fired, "the schedule to fire")
    result = await client.get_workflow_handle(workflow_id).result()
    assert result["outcome"] == "started", result
    settled = await runs.wait_until_settled(store, graph["id"], SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    await handle.delete()
    return str(workflow_id)


LANE_COMMIT = {
    "name": "commit",
    "command": 'echo "$CANOPY_SPEC_NAME" > "$CANOPY_SPEC_ID.txt" && git add -A'
    ' && git commit -q -m "$CANOPY_SPEC_NAME"',
}
"""A node that commits a file of its own spec's."""


async def lanes(client: Client, store: Store, repo: Path) -> str:
    """Three queued specs through two lanes, each committing its own file: each opens a
    lane, walks, integrates in order and has its lane removed."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta", "gamma"):
        queues.queue_add_spec(store, queue, spec_id)
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "lanes": 2, "nodes": [LANE_COMMIT]}
    )
    result = await settle(client, store, graph["id"], queue=queue)
    assert result["status"] == "completed"
    return str(result["workflow_id"])


async def lanes_conflict(client: Client, store: Store, repo: Path) -> str:
    """Two lanes whose specs change the same line: the second to integrate pauses the run
    on a merge conflict, and a skip lets it complete."""
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in make_specs(store, "alpha", "beta"):
        queues.queue_add_spec(store, queue, spec_id)
    both = repo.parent / "both"
    both.mkdir()
    edit = {
        "name": "edit",
        "command": f'touch "{both}/$CANOPY_SPEC_ID"; while [ "$(ls "{both}" | wc -l)" -lt 2 ];'
        ' do sleep 0.05; done; echo "$CANOPY_SPEC_NAME" > README.md && git commit -q -am x',
    }
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "lanes": 2, "nodes": [edit]}
    )["id"]
    started = await runs.graph_run(store, graph, queue=queue)

    def conflicted() -> bool:
        return bool((graph_state(store, graph)["blocker"] or {}).get("kind") == "merge_conflict")

    await eventually(conflicted, "the merge conflict")
    await control.graph_continue(store, graph, "skip_next_spec")
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    return str(started["workflow_id"])


SCENARIOS: dict[str, Scenario] = {
    "drain": drain,
    "settle_failed": settle_failed,
    "continue_as_new": continue_as_new,
    "pass_over": pass_over,
    "ensemble_failover": ensemble_failover,
    "pause_continue": pause_continue,
    "pause_at_continue_as_new": pause_at_continue_as_new,
    "budget_pause": budget_pause,
    "session_delivery": session_delivery,
    "scheduled_run": scheduled_run,
    "lanes": lanes,
    "lanes_conflict": lanes_conflict,
    "lanes_continue_as_new": lanes,
}


LIMIT_WAIT = "limit_wait"
"""Recorded on the time-skipping server by its own test, not a dev-server scenario."""


def record(history: WorkflowHistory, path: Path) -> None:
    """Commit-ready JSON of ``history`` (``CANOPY_RECORD_HISTORIES=1``)."""
    HISTORIES.mkdir(exist_ok=True)
    path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")


async def histories_of(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """Every execution of ``workflow_id`` (a continue-as-new chain), oldest first."""
    executions = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    executions.sort(key=lambda e: e.start_time)
    return [
        await client.get_workflow_handle(workflow_id, run_id=e.run_id).fetch_history()
        for e in executions
    ]


async def replay(history: WorkflowHistory) -> None:
    replayer = Replayer(
        workflows=[GraphRunV2, SessionDelivery, ScheduledRun],
        data_converter=pydantic_data_converter,
    )
    await replayer.replay_workflow(history)


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_fresh_histories_replay(
    name: str,
    serving: Client,
    home_store: Store,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    per_execution = {
        "continue_as_new": "2",
        "pause_at_continue_as_new": "1",
        "lanes_continue_as_new": "2",
    }.get(name, "100")
    monkeypatch.setenv("CANOPY_SPECS_PER_EXECUTION", per_execution)
    workflow_id = await SCENARIOS[name](serving, home_store, repo)
    histories = await histories_of(serving, workflow_id)
    assert len(histories) == (2 if per_execution != "100" else 1)
    for history in histories:
        await replay(history)
    if os.environ.get("CANOPY_RECORD_HISTORIES") == "1":
        for index, history in enumerate(histories):
            record(history, HISTORIES / f"{name}-{index}.json")


async def test_a_limit_wait_history_replays(
    time_skipping: WorkflowEnvironment, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    """A node hits a usage limit once: the run waits out the five-hour reset on a timer
    (the time-skipping server lets it pass at once), then re-runs the node."""
    marker = tmp_path / "limited-once"
    node = fake_node("implement", f"FAKE: limit-once {marker}\nFAKE: commit done")
    graph = graphs.graph_create(
        home_store,
        {
            "name": "g",
            "workdir": str(repo),
            "nodes": [node],
            "specs": make_specs(home_store, "alpha"),
        },
    )["id"]
    started = await runs.graph_run(home_store, graph)

    def resume_scheduled() -> bool:
        return graphs.graph_get(home_store, graph)["scheduled_resume_at"] is not None

    await eventually(resume_scheduled, "the run to schedule its resume")
    await time_skipping.sleep(timedelta(hours=5, minutes=1))
    settled = await runs.wait_until_settled(home_store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    handle = time_skipping.client.get_workflow_handle(started["workflow_id"])
    history = await handle.fetch_history()
    await replay(history)
    if os.environ.get("CANOPY_RECORD_HISTORIES") == "1":
        record(history, HISTORIES / f"{LIMIT_WAIT}-0.json")


COMMITTED = sorted(HISTORIES.glob("*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda path: path.stem)
async def test_committed_histories_replay(path: Path) -> None:
    await replay(WorkflowHistory.from_json(path.stem, path.read_text()))


def scenarios_recorded(directory: Path) -> set[str]:
    return {path.stem.rsplit("-", 1)[0] for path in directory.glob("*.json")}


def test_every_scenario_has_a_committed_history() -> None:
    assert scenarios_recorded(HISTORIES) == {*SCENARIOS, LIMIT_WAIT}
