"""Hook firing on the real dev server (reference "Event-keyed hooks").

Command hooks append what they saw to a file in the test's tmp dir, so each test reads
exactly which hooks fired, in which order, with which marker values and environment.
"""

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import ActivityEnvironment

from canopy.activities.hooks import HookActivities
from canopy.contracts.graph_run import ContinueRequest, HookFiring
from canopy.ops import control, graphs, queues, runs, specs
from canopy.store.engine import Store
from canopy.store.queries import stored_json
from tests import engine
from tests.conftest import make_specs
from tests.engine import eventually, fake_node, file_lines, make_graph, settle

pytestmark = pytest.mark.server
TIMEOUT = 60.0


store = engine.home_store
"""Here the store is the one the worker's activities write: this test's data dir."""


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "hooks.log"


def echo(log: Path, text: str) -> dict[str, Any]:
    """A command hook appending one line (markers rendered, shell-quoted) to ``log``."""
    return {"command": f"echo {text} >> {log}"}


def set_hooks(store: Store, graph: str, hooks: dict[str, list[dict[str, Any]]]) -> None:
    """Register hooks the way users do (``graph_edit update``); read at the next event."""
    graphs.graph_edit(store, graph, {"hooks": hooks})


def hook_runs(store: Store) -> list[SimpleNamespace]:
    """Every hook run's fields, oldest first, its config decoded."""
    with store.transaction() as rows:
        found = rows(
            "SELECT event, hook_index, spec_id, status, output, error,"
            " CAST(hook_config AS TEXT) AS hook_config FROM hook_runs ORDER BY id",
            {},
        )
    return [
        SimpleNamespace(**{**row, "hook_config": stored_json(row["hook_config"])}) for row in found
    ]


PASS = {"name": "work", "command": "true"}
ENV_SPEC = "$CANOPY_HOOK_SPEC_ID"


async def test_each_event_fires_its_hooks_in_declaration_order_with_its_markers(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [PASS], specs=[a, b])
    set_hooks(
        store,
        graph,
        {
            "on_spec_completed": [
                echo(log, "first {{spec_name}} {{spec_id}} {{blocker}} {{completed_specs}}"),
                echo(log, "second {{spec_name}}"),
            ],
            "on_completed": [
                {"command": f"printf '%s\\n' {{{{completed_specs}}}} {{{{node}}}} >> {log}"},
                {"command": f'echo "$CANOPY_HOOK_EVENT $CANOPY_HOOK_WORKDIR {ENV_SPEC}" >> {log}'},
            ],
        },
    )
    assert (await settle(serving, store, graph))["status"] == "completed"
    assert file_lines(log) == [
        f"first alpha {a} (none) (none)",
        "second alpha",
        f"first beta {b} (none) (none)",
        "second beta",
        "alpha: alpha summary",
        "beta: beta summary",
        "(none)",
        f"on_completed {repo} (none)",
    ]
    recorded = hook_runs(store)
    assert [(r.event, r.hook_index, r.spec_id, r.status) for r in recorded] == [
        ("on_spec_completed", 0, a, "succeeded"),
        ("on_spec_completed", 1, a, "succeeded"),
        ("on_spec_completed", 0, b, "succeeded"),
        ("on_spec_completed", 1, b, "succeeded"),
        ("on_completed", 0, None, "succeeded"),
        ("on_completed", 1, None, "succeeded"),
    ]
    assert recorded[1].hook_config == echo(log, "second {{spec_name}}")


async def test_on_spec_completed_fires_for_queue_members_and_spec_ids_filter(
    serving: Client, store: Store, repo: Path, log: Path, tmp_path: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a)
    queues.queue_add_spec(store, queue, b)
    gate = tmp_path / "gate"
    graph = make_graph(
        store, repo, [{"name": "work", "command": f"until [ -e {gate} ]; do sleep 0.05; done"}]
    )
    started = await runs.graph_run(store, graph, queue=queue)
    # spec_ids resolve against the active run's queue members, by unique prefix
    set_hooks(
        store,
        graph,
        {
            "on_spec_completed": [
                echo(log, "any {{spec_name}}"),
                {**echo(log, "only {{spec_name}}"), "spec_ids": [b[:-2]]},
            ]
        },
    )
    gate.touch()
    handle = serving.get_workflow_handle(started["workflow_id"])
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "completed"
    assert file_lines(log) == ["any alpha", "any beta", "only beta"]
    (stored,) = [h for h in hook_runs(store) if h.hook_index == 1]
    assert stored.hook_config["spec_ids"] == [b], "stored as the full id"


async def test_a_failing_hook_is_recorded_and_changes_nothing_else(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [PASS], specs=[a])
    set_hooks(
        store,
        graph,
        {"on_completed": [{"command": "echo boom; exit 7"}, echo(log, "still ran")]},
    )
    assert (await settle(serving, store, graph))["status"] == "completed"
    assert file_lines(log) == ["still ran"]
    failed, ok = hook_runs(store)
    assert (failed.status, failed.error, failed.output) == ("failed", "exit code 7", "boom\n")
    assert ok.status == "succeeded"
    info = graphs.graph_get(store, graph)
    assert info["status"] == "completed"
    listed = info["completion_hook_runs"]
    assert [(h["event"], h["hook_index"], h["status"]) for h in listed] == [
        ("on_completed", 0, "failed"),
        ("on_completed", 1, "succeeded"),
    ]
    assert listed[0]["hook_config"] == {"command": "echo boom; exit 7"}
    assert listed[0]["error"] == "exit code 7"


async def test_on_failed_gets_blocker_node_and_spec_id_and_honours_spec_ids(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [{"name": "check", "command": "exit 3"}], specs=[a, b])
    set_hooks(
        store,
        graph,
        {
            "on_failed": [
                echo(log, "{{node}} {{spec_id}} {{spec_name}} {{blocker}}"),
                {**echo(log, "for beta only"), "spec_ids": [b]},
                {**echo(log, "for alpha"), "spec_ids": [a]},
            ],
            "on_completed": [echo(log, "never")],
        },
    )
    assert (await settle(serving, store, graph))["status"] == "failed"
    assert file_lines(log) == [
        f"check {a} (none) spec alpha ({a}) failed at node check",
        "for alpha",
    ]


async def test_on_completed_needs_a_completed_spec_and_fires_again_after_reset(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a)
    graph = make_graph(store, repo, [PASS])
    set_hooks(store, graph, {"on_completed": [echo(log, "completed {{completed_specs}}")]})
    specs.spec_set_status(store, a, "skip")
    assert (await settle(serving, store, graph, queue=queue))["status"] == "completed"
    assert file_lines(log) == [], "no spec completed: on_completed does not fire"
    specs.spec_set_status(store, a, "reopen")
    await control.graph_reset(store, graph)
    assert (await settle(serving, store, graph, queue=queue))["status"] == "completed"
    specs.spec_set_status(store, a, "reopen")  # a queue member: reset reopens bound specs only
    await control.graph_reset(store, graph)
    assert (await settle(serving, store, graph, queue=queue))["status"] == "completed"
    assert file_lines(log) == ["completed alpha: alpha summary"] * 2


def graph_blocker(store: Store, graph: str) -> Any:
    with store.transaction() as rows:
        (row,) = rows(
            "SELECT CAST(blocker AS TEXT) AS blocker FROM graphs WHERE id = :id", {"id": graph}
        )
    return stored_json(row["blocker"])


async def test_on_blocked_fires_once_per_pause_and_hooks_are_read_when_the_event_fires(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    node = {"name": "work", "command": f"test {{{{spec_id}}}} != {a} || echo x > scratch.txt"}
    graph = make_graph(store, repo, [node], specs=[a, b])
    set_hooks(store, graph, {"on_spec_completed": [echo(log, "early {{spec_name}}")]})
    started = await runs.graph_run(store, graph)
    handle = serving.get_workflow_handle(started["workflow_id"])
    await hooks_fired(handle, 2)  # alpha's on_spec_completed, then the pause's on_blocked
    # registered after alpha completed and after the pause: not retroactive
    set_hooks(
        store,
        graph,
        {
            "on_spec_completed": [echo(log, "late {{spec_name}}")],
            "on_blocked": [echo(log, "blocked {{node}}")],
        },
    )
    before = len(hook_runs(store))
    await handle.signal("continue_run", ContinueRequest())  # still dirty: same pause
    await eventually(lambda: graph_blocker(store, graph) is not None, "the blocker")
    (repo / "scratch.txt").unlink()
    await handle.signal("continue_run", ContinueRequest())
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "completed"
    assert file_lines(log) == ["early alpha", "late beta"]
    assert len(hook_runs(store)) == before + 1


async def test_on_blocked_fires_for_a_pause_with_the_blocker(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    node = {"name": "work", "command": f"test {{{{spec_id}}}} != {a} || echo x > scratch.txt"}
    graph = make_graph(store, repo, [node], specs=[a, b])
    set_hooks(store, graph, {"on_blocked": [echo(log, "{{blocker}} {{spec_id}}")]})
    await runs.graph_run(store, graph)
    await eventually(lambda: file_lines(log), "the on_blocked hook")
    (message,) = file_lines(log)
    assert message.startswith(f"workdir {repo} is dirty (1 dirty path: scratch.txt)")
    assert message.endswith("(none)")


async def test_node_names_where_a_blocked_or_failed_queue_run_stands(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    """``{{node}}`` of ``on_blocked`` is the node the next spec would start at; of a queue
    run's ``on_failed``, the node that ended the failed member."""
    a, b, c = make_specs(store, "alpha", "beta", "gamma")
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in (a, b, c):
        queues.queue_add_spec(store, queue, spec_id)
    dirty_after_a = {"name": "prep", "command": f"test {{{{spec_id}}}} != {a} || touch scratch"}
    fail_b = {"name": "check", "command": f"test {{{{spec_id}}}} != {b}"}
    graph = make_graph(store, repo, [dirty_after_a, fail_b])
    set_hooks(
        store,
        graph,
        {
            "on_blocked": [echo(log, "blocked {{node}}")],
            "on_failed": [echo(log, "failed {{node}}")],
        },
    )
    started = await runs.graph_run(store, graph, queue=queue)
    await eventually(lambda: file_lines(log), "the dirty tree's on_blocked hook")
    (repo / "scratch").unlink()
    await control.graph_continue(store, graph)
    handle = serving.get_workflow_handle(started["workflow_id"])
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "failed"
    assert file_lines(log) == ["blocked prep", "failed check"]


async def test_agent_and_interactive_hooks(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [PASS], specs=[a])
    doc_agent = fake_node("docs", "Update docs for:\n{{completed_specs}}\n{{blocker}}")
    del doc_agent["name"]
    set_hooks(
        store,
        graph,
        {
            "on_completed": [
                doc_agent,
                {"prompt": "done {{graph_name}}", "target_session_name": "reviewer"},
            ]
        },
    )
    assert (await settle(serving, store, graph))["status"] == "completed"
    agent, interactive = hook_runs(store)
    assert agent.status == "succeeded"
    assert "Update docs for:\nalpha: alpha summary\n(none)" in record.read_text().replace(
        "\\n", "\n"
    )
    assert interactive.status == "failed"
    assert interactive.error == "no live session is named 'reviewer'"


async def test_firing_is_idempotent_across_activity_retries(
    serving: Client, store: Store, repo: Path, log: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [PASS], specs=[a])
    set_hooks(store, graph, {"on_blocked": [echo(log, "once")]})
    started = await runs.graph_run(store, graph)
    firing = HookFiring(
        run_id=started["run_id"],
        graph_id=graph,
        graph_name="build",
        workdir=str(repo),
        event="on_blocked",
        occurrence="test",
        blocker="b",
    )
    environment, hooks = ActivityEnvironment(), HookActivities(store)
    first = await environment.run(hooks.fire_hooks, firing)
    again = await environment.run(hooks.fire_hooks, firing)
    assert (len(first.hook_run_ids), again.hook_run_ids, file_lines(log)) == (1, [], ["once"])


async def hooks_fired(handle: WorkflowHandle[Any, Any], count: int) -> None:
    """Wait until the run has finished firing ``count`` events' hooks."""

    async def finished() -> int:
        history = await handle.fetch_history()
        scheduled = {
            e.event_id
            for e in history.events
            if e.activity_task_scheduled_event_attributes.activity_type.name == "fire_hooks"
        }
        return sum(
            1
            for e in history.events
            if e.activity_task_completed_event_attributes.scheduled_event_id in scheduled
        )

    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while await finished() < count:
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"the run did not fire {count} events' hooks")
        await asyncio.sleep(0.05)


async def test_workdir_is_the_runs_override_when_one_applies(
    serving: Client, store: Store, repo: Path, log: Path, tmp_path: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    elsewhere = tmp_path / "stored-workdir"
    graph = make_graph(store, elsewhere, [PASS], specs=[a])
    set_hooks(
        store,
        graph,
        {"on_completed": [{"command": f'echo {{{{workdir}}}} "$CANOPY_HOOK_WORKDIR" >> {log}'}]},
    )
    assert (await settle(serving, store, graph, workdir=str(repo)))["status"] == "completed"
    assert file_lines(log) == [f"{repo} {repo}"]
