"""Runs you can read in the Temporal UI: a blocked run is told from a working
one by its ``CanopyStatus`` and ``CanopyBlocker`` search attributes, as the real
``temporal`` CLI lists them; a run's static summary and details say what it drains and how
to steer it, and its current details show the blocker with its dirty paths and ways out.
On a server Canopy did not start, the attributes are registered when missing."""

import json
import re
import uuid
from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from canopy import search_attributes
from canopy.ops import graphs, runs
from canopy.search_attributes import SEARCH_ATTRIBUTES
from canopy.store.engine import Store
from tests.conftest import make_specs
from tests.engine import eventually, node_run_of, temporal
from tests.test_signals import TIMEOUT

pytestmark = pytest.mark.server


async def listed(client: Client, query: str) -> set[str]:
    """The workflow ids ``temporal workflow list --query`` finds."""
    out = await temporal(client, "workflow", "list", "--query", query, "-o", "json")
    return {row["execution"]["workflowId"] for row in json.loads(out or "[]")}


async def test_a_blocked_run_is_told_from_a_working_one_in_the_temporal_ui(
    serving: Client, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    store = home_store
    alpha, beta, gamma = make_specs(store, "alpha", "beta", "gamma")
    dirtying = {"name": "work", "command": f"test {{{{spec_id}}}} != {alpha} || touch scratch"}
    blocked = graphs.graph_create(
        store,
        {"name": "blocked", "workdir": str(repo), "nodes": [dirtying], "specs": [alpha, beta]},
    )["id"]
    other_repo = tmp_path / "other"
    other_repo.mkdir()
    hold = {"name": "hold", "command": f"while [ ! -e {tmp_path / 'gate'} ]; do sleep 0.05; done"}
    working = graphs.graph_create(
        store, {"name": "working", "nodes": [hold], "specs": [gamma], "workdir": str(repo)}
    )["id"]
    paused = await runs.graph_run(store, blocked)
    assert (await runs.wait_until_settled(store, blocked, TIMEOUT))["status"] == "paused"
    (repo / "scratch").unlink()  # the other graph may start on a clean tree
    moving = await runs.graph_run(store, working)
    await eventually(lambda: node_run_of(store, gamma, "running"), "gamma's node")

    try:
        paused_id, moving_id = paused["workflow_id"], moving["workflow_id"]
        found = await eventually(
            lambda: _both_listed(serving, paused_id, moving_id), "both runs in the visibility store"
        )
        assert found
        assert paused_id in await listed(serving, "CanopyStatus='paused'")
        assert moving_id not in await listed(serving, "CanopyStatus='paused'")
        assert moving_id in await listed(serving, "CanopyStatus='running'")
        assert await listed(serving, "CanopyBlocker='dirty_tree'") >= {paused_id}

        described = json.loads(
            await temporal(
                serving, "workflow", "describe", "--workflow-id", paused_id, "-o", "json"
            )
        )
        metadata = described["executionConfig"]["userMetadata"]
        static = json.dumps(metadata)
        assert "blocked: run 1 over its bound specs in" in static, "the summary"
        assert "--name continue_run" in static, "the details: how to steer it with temporal"
        details = await temporal(serving, "workflow", "metadata", "--workflow-id", paused_id)
        assert "**Paused** (dirty_tree)" in details
        assert "- `scratch`" in details, "the dirty path"
        assert "`canopy graph continue blocked --mode run_from_node`" in details, "a way out"
        prose = re.sub(r"(`+).+?\1", "", details)
        assert "--" not in prose, "every command in a code span: markdown makes -- a dash"
        beat = await eventually(
            lambda: _heartbeat(serving, moving_id), "the running node's heartbeat details"
        )
        assert (beat["spec_id"], beat["node"]) == (gamma, "hold")
        assert beat["log"].endswith("/output.log")
        unsummarised = await _without_summary(serving, paused_id)
        assert unsummarised == [], "every activity and local activity has a summary"
    finally:
        (tmp_path / "gate").touch()


async def _both_listed(client: Client, *workflow_ids: str) -> bool:
    everything = await listed(client, "CanopyStatus IS NOT NULL")
    return set(workflow_ids) <= everything


async def _heartbeat(client: Client, workflow_id: str) -> dict[str, str] | None:
    """The heartbeat details of the workflow's pending node activity, once it has any."""
    description = await client.get_workflow_handle(workflow_id).describe()
    for pending in description.raw_description.pending_activities:
        details = await client.data_converter.decode(pending.heartbeat_details.payloads)
        if details:
            found: dict[str, str] = details[0]
            return found
    return None


async def _without_summary(client: Client, workflow_id: str) -> list[str]:
    """The activity and marker events of the run's history that carry no summary."""
    missing = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        kind = EventType.Name(event.event_type)
        scheduled = kind in ("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "EVENT_TYPE_MARKER_RECORDED")
        if scheduled and not event.user_metadata.HasField("summary"):
            missing.append(f"{event.event_id} {kind}")
    return missing


async def test_missing_search_attributes_are_registered_on_a_server_canopy_did_not_start(
    temporal_env: WorkflowEnvironment,
) -> None:
    """What ``canopy up`` does against ``TEMPORAL_ADDRESS``: a namespace set up without
    Canopy's attributes gets them, once."""
    namespace = f"fresh-{uuid.uuid4().hex[:8]}"
    service = temporal_env.client.workflow_service
    await service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace,
            workflow_execution_retention_period=Duration(seconds=86400),
        )
    )
    client = await Client.connect(
        temporal_env.client.service_client.config.target_host, namespace=namespace
    )

    async def namespace_ready() -> list[str]:
        try:
            return await search_attributes.missing(client)
        except RPCError:  # the namespace is not yet known everywhere
            return []

    assert set(await eventually(namespace_ready, "the new namespace")) == set(SEARCH_ATTRIBUTES)
    assert await search_attributes.register_missing(client) == (
        f"registered search attributes {', '.join(SEARCH_ATTRIBUTES)}"
    )
    assert await eventually(
        lambda: _none_missing(client), "the attributes to be registered", TIMEOUT
    )
    assert await search_attributes.register_missing(client) is None, "nothing left to do"


async def _none_missing(client: Client) -> bool:
    return not await search_attributes.missing(client)


async def test_the_run_s_progress_counts_every_spec_between_counts_and_nodes(
    serving: Client, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    """``spec 3 of 3`` at the last spec's second node: the total is kept between counts of
    the pending specs (one fewer per spec closed), and a read of the next node, while the
    spec is no longer pending, does not shrink it."""
    store = home_store
    alpha, beta, gamma = make_specs(store, "alpha", "beta", "gamma")
    gate = tmp_path / "gate"
    wait = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    nodes = [
        {"name": "first", "command": "true"},
        {"name": "hold", "command": f"test {{{{spec_id}}}} != {gamma} || {wait}"},
    ]
    graph = graphs.graph_create(
        store,
        {"name": "counted", "workdir": str(repo), "nodes": nodes, "specs": [alpha, beta, gamma]},
    )["id"]
    started = await runs.graph_run(store, graph)
    try:
        await eventually(
            lambda: _node_running(store, gamma, "hold"), "the last spec's second node", TIMEOUT
        )
        details = await eventually(
            lambda: _details_naming(serving, started["workflow_id"], gamma), "its details"
        )
        assert "spec 3 of 3" in details
    finally:
        gate.touch()
    assert (await runs.wait_until_settled(store, graph, TIMEOUT))["status"] == "completed"


def _node_running(store: Store, spec_id: str, node: str) -> bool:
    with store.transaction() as rows:
        running = rows(
            "SELECT id FROM node_runs WHERE spec_id = :spec_id AND node = :node"
            " AND status = 'running'",
            {"spec_id": spec_id, "node": node},
        )
    return bool(running)


async def _details_naming(client: Client, workflow_id: str, spec_id: str) -> str | None:
    details = await temporal(client, "workflow", "metadata", "--workflow-id", workflow_id)
    return details if spec_id in details and "node `hold`" in details else None
