"""Schedules: ``canopy graph schedule`` makes a Temporal Schedule whose fires start the
graph's run through ``graph run``'s start path; a fire while the graph runs is skipped and
recorded; pause, unpause and delete reach Temporal; ``graph delete`` deletes them.

On the real dev server with an in-process worker; the CLI runs in a subprocess on the
test's task queues, and the ``temporal`` CLI is asked what the server holds.
"""

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleActionExecutionStartWorkflow

from canopy.ops import runs
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from tests import engine
from tests.cli_helpers import Result, canopy_env, run_canopy
from tests.conftest import make_specs
from tests.engine import SETTLE_TIMEOUT, TEMPORAL_BIN, eventually, make_graph, make_queue

store = engine.home_store

BOOT = (
    "import sys; from canopy.temporal import client as t; "
    "t.MAIN_TASK_QUEUE = sys.argv.pop(1); agents = sys.argv.pop(1); "
    "t.agents_task_queue = lambda host=None: agents; "
    "from canopy.cli.main import main; main()"
)
"""``canopy`` as installed, but on this test's task queues (the in-process worker's)."""


async def canopy(client: Client, home: Path, *args: str) -> Result:
    """``canopy ARGS`` against the dev server, on the test's task queues."""
    queues = [temporal_client.MAIN_TASK_QUEUE, temporal_client.agents_task_queue()]
    env = canopy_env(home, TEMPORAL_ADDRESS=client.service_client.config.target_host)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        BOOT,
        *queues,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), SETTLE_TIMEOUT)
    assert process.returncode is not None
    return Result(process.returncode, stdout.decode(), stderr.decode())


def ok(result: Result) -> Any:
    assert result.code == 0, result.stderr
    return result.json()


async def temporal(client: Client, *args: str) -> tuple[int, str]:
    """The ``temporal`` CLI's exit code and output, against the dev server."""
    process = await asyncio.create_subprocess_exec(
        str(TEMPORAL_BIN),
        *args,
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    stdout, _ = await asyncio.wait_for(process.communicate(), SETTLE_TIMEOUT)
    assert process.returncode is not None
    return process.returncode, stdout.decode()


async def described(client: Client, temporal_id: str) -> dict[str, Any]:
    code, output = await temporal(
        client, "schedule", "describe", "--schedule-id", temporal_id, "-o", "json"
    )
    assert code == 0, output
    found: dict[str, Any] = json.loads(output)
    return found


async def fire(client: Client, temporal_id: str, fired_before: int) -> dict[str, Any]:
    """Trigger the schedule with the ``temporal`` CLI; the result of the ScheduledRun it
    started (the fire's outcome, as the Temporal UI shows it)."""
    code, output = await temporal(client, "schedule", "trigger", "--schedule-id", temporal_id)
    assert code == 0, output
    handle = client.get_schedule_handle(temporal_id)

    async def started() -> str | None:
        actions = (await handle.describe()).info.recent_actions
        if len(actions) <= fired_before:
            return None
        action = actions[-1].action
        assert isinstance(action, ScheduleActionExecutionStartWorkflow)
        return action.workflow_id

    workflow_id = await eventually(started, "the fire's ScheduledRun to start")
    result: dict[str, Any] = await asyncio.wait_for(
        client.get_workflow_handle(workflow_id).result(), SETTLE_TIMEOUT
    )
    return result


def stored_schedules(store: Store) -> list[dict[str, Any]]:
    with store.transaction() as rows:
        return rows("SELECT * FROM schedules ORDER BY id", {})


def run_ids(store: Store, graph_id: str) -> list[str]:
    with store.transaction() as rows:
        found = rows("SELECT id FROM runs WHERE graph_id = :id ORDER BY number", {"id": graph_id})
    return [row["id"] for row in found]


@pytest.mark.server
async def test_a_schedule_fires_a_run_skips_an_overlapping_fire_and_goes_with_its_graph(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    gate = tmp_path / "gate"
    hold = {"name": "hold", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [hold])
    make_queue(store, make_specs(store, "alpha"), "nightly")
    created = ok(
        await canopy(
            serving,
            canopy_home,
            *("graph", "schedule", "build", "--cron", "0 3 * * *", "--queue", "nightly"),
            *("--timezone", "Europe/Paris", "--json"),
        )
    )
    temporal_id = created["temporal_id"]
    assert temporal_id == f"canopy-schedule-{graph}-{created['id']}"
    assert (created["cron"], created["timezone"], created["paused"]) == (
        "0 3 * * *",
        "Europe/Paris",
        False,
    )
    assert created["next_fire"] is not None and created["temporal"] is None
    code, listed = await temporal(serving, "schedule", "list")
    assert code == 0 and temporal_id in listed, listed

    first = await fire(serving, temporal_id, 0)
    assert first["outcome"] == "started", first
    (run_id,) = run_ids(store, graph)
    assert first["run_id"] == run_id

    second = await fire(serving, temporal_id, 1)
    assert second["outcome"] == "skipped", second
    assert f"already has an active run {run_id}" in second["line"]
    assert run_ids(store, graph) == [run_id], "no second run started"
    (row,) = ok(await canopy(serving, canopy_home, "schedule", "list", "--json"))
    assert (row["last_outcome"], row["last_line"]) == ("skipped", second["line"])
    assert (row["graph_name"], row["queue_name"], row["paused"]) == ("build", "nightly", False)
    assert row["next_fire"] is not None and row["temporal"] is None

    gate.touch()
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled

    paused = ok(await canopy(serving, canopy_home, "schedule", "pause", created["id"], "--json"))
    assert paused["paused"] is True
    assert (await described(serving, temporal_id))["schedule"]["state"]["paused"] is True
    ok(await canopy(serving, canopy_home, "schedule", "unpause", created["id"], "--json"))
    assert not (await described(serving, temporal_id))["schedule"]["state"].get("paused")

    deleted = ok(await canopy(serving, canopy_home, "graph", "delete", "build", "--json"))
    assert deleted["deleted_schedules"] == [created["id"]]
    code, output = await temporal(serving, "schedule", "describe", "--schedule-id", temporal_id)
    assert code != 0, output
    assert stored_schedules(store) == []


@pytest.mark.server
async def test_schedule_delete_removes_it_from_temporal_and_the_store(
    serving: Client, store: Store, repo: Path, canopy_home: Path
) -> None:
    make_graph(store, repo, [{"name": "work", "command": "true"}], specs=make_specs(store, "a"))
    created = ok(
        await canopy(
            serving, canopy_home, "graph", "schedule", "build", "--cron", "@daily", "--json"
        )
    )
    assert created["timezone"] == "UTC"
    deleted = ok(await canopy(serving, canopy_home, "schedule", "delete", created["id"], "--json"))
    assert deleted == {"id": created["id"], "graph_id": created["graph_id"], "deleted": True}
    code, output = await temporal(
        serving, "schedule", "describe", "--schedule-id", created["temporal_id"]
    )
    assert code != 0, output
    assert stored_schedules(store) == []


BAD_SCHEDULES = [
    (
        ["--cron", "61 * * * *"],
        "error: cron expression '61 * * * *': minute '61': values must be between 0 and 59",
    ),
    (
        ["--cron", "* * *"],
        "error: cron expression '* * *' has 3 field(s); it needs 5 (minute hour day-of-month "
        "month day-of-week), or one of @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight, @hourly",
    ),
    (
        ["--cron", "@daily", "--timezone", "Mars/Olympus"],
        "error: unknown timezone 'Mars/Olympus': use an IANA name such as UTC or Europe/Paris",
    ),
    (["--cron", "@daily", "--queue", "nope"], "error: no queue matches 'nope'"),
]


@pytest.mark.parametrize(("args", "line"), BAD_SCHEDULES)
def test_a_bad_schedule_is_refused_in_one_line_and_nothing_is_written(
    store: Store, repo: Path, canopy_home: Path, args: list[str], line: str
) -> None:
    """Refused before Temporal is asked: no server runs here."""
    make_graph(store, repo, [{"name": "work", "command": "true"}])
    result = run_canopy(canopy_home, "graph", "schedule", "build", *args)
    assert (result.code, result.stderr) == (1, line + "\n")
    assert stored_schedules(store) == []


def test_an_unknown_graph_is_refused(store: Store, canopy_home: Path) -> None:
    result = run_canopy(canopy_home, "graph", "schedule", "nope", "--cron", "@daily")
    assert (result.code, result.stderr) == (1, "error: no graph matches 'nope'\n")
    assert stored_schedules(store) == []


def test_a_graph_with_schedules_is_kept_while_temporal_is_unreachable(
    store: Store, repo: Path, canopy_home: Path
) -> None:
    """Its schedules would go on firing unseen: the delete is refused in one line."""
    graph = make_graph(store, repo, [{"name": "work", "command": "true"}])
    with store.transaction() as rows:
        rows(
            "INSERT INTO schedules (id, graph_id, temporal_id, cron, timezone, created_at)"
            " VALUES ('sched-1', :graph, 'canopy-schedule-x', '@daily', 'UTC', '2026-01-01')",
            {"graph": graph},
        )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    result = run_canopy(canopy_home, "graph", "delete", "build", env={"TEMPORAL_ADDRESS": address})
    assert result.code == 1
    assert result.stderr.startswith(
        "error: graph build was not deleted: its 1 schedule(s) live in Temporal, which is "
        f"unreachable (cannot reach Temporal at {address}"
    )
    assert result.stderr.count("\n") == 1
    assert len(stored_schedules(store)) == 1
