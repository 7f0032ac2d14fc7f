"""Stalled agents: an agent that prints nothing for ``stall_minutes`` is killed
with its process group, its node run ends ``stalled``, and the node's ``on_failure``
applies. The limit is per node, defaults to the config file's ``[agents]`` value (60
minutes unless set), and 0 turns it off."""

from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from canopy.errors import Refused
from canopy.graphs.model import validate_definition
from canopy.ops import graphs, queues, runs, specs
from canopy.platforms import load_stall_minutes
from canopy.store.engine import Store
from tests.conftest import body
from tests.engine import agent_runs, alive, eventually

TIMEOUT = 60.0
RECOVER = {"name": "recover", "command": "echo recovered > recovered.txt"}


def node_runs(store: Store) -> list[tuple[str, str, str | None]]:
    with store.transaction() as rows:
        found = rows("SELECT node, status, error FROM node_runs ORDER BY id", {})
    return [(row["node"], row["status"], row["error"]) for row in found]


async def run_graph(store: Store, repo: Path, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """One spec through a graph of ``nodes``, run to its end; the settled graph."""
    spec = specs.spec_create(store, "alpha", body("alpha summary"))["id"]
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, spec)
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": nodes})
    await runs.graph_run(store, graph["id"], queue=queue)
    settled: dict[str, Any] = await runs.wait_until_settled(store, graph["id"], TIMEOUT)
    return settled


@pytest.mark.server
async def test_a_silent_agent_is_killed_and_its_on_failure_applies(
    time_skipping: WorkflowEnvironment, home_store: Store, repo: Path, record: Path
) -> None:
    agent = {
        "name": "implement",
        "platform": "claude",
        "prompt": "FAKE: hang",
        "stall_minutes": 0.02,
        "on_failure": "recover",
    }
    settled = await run_graph(home_store, repo, [agent, RECOVER])
    assert settled["status"] == "completed"
    assert node_runs(home_store) == [
        ("implement", "stalled", "node implement printed nothing for 0.02 minutes and was stopped"),
        ("recover", "succeeded", None),
    ]
    assert (repo / "recovered.txt").exists()
    (launch,) = agent_runs(record)
    await eventually(lambda: not alive(launch["pid"]), "the stalled agent to be gone", 5)


@pytest.mark.server
async def test_the_config_file_sets_the_default_and_a_node_may_turn_it_off(
    time_skipping: WorkflowEnvironment,
    canopy_home: Path,
    home_store: Store,
    repo: Path,
    record: Path,
) -> None:
    config = canopy_home / "config.toml"
    config.write_text(config.read_text() + "\n[agents]\nstall_minutes = 0.01\n")
    quiet = {
        "name": "quiet",
        "platform": "codex",
        "prompt": "FAKE: sleep 2",
        "stall_minutes": 0,  # off: two silent seconds are fine here
        "next": "hung",
    }
    hung = {"name": "hung", "platform": "gemini", "prompt": "FAKE: hang"}  # the default
    settled = await run_graph(home_store, repo, [quiet, hung])
    assert settled["status"] == "failed", "a stall without on_failure fails the spec"
    assert [(node, status) for node, status, _ in node_runs(home_store)] == [
        ("quiet", "succeeded"),
        ("hung", "stalled"),
    ]


def test_stall_minutes_is_checked_where_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path))
    agent = {"name": "a", "platform": "claude", "prompt": "p"}
    assert validate_definition({"name": "g", "workdir": "/w", "nodes": [agent]}).nodes
    for value, problem in [
        (-1, "-1 is out of range; it must be between 0 and 10080 minutes (7 days)"),
        (20_000, "20000 is out of range"),
    ]:
        bad = {**agent, "stall_minutes": value}
        with pytest.raises(Refused) as refused:
            validate_definition({"name": "g", "workdir": "/w", "nodes": [bad]})
        assert f"nodes[0].stall_minutes (node a): {problem}" in refused.value.message
    command = {"name": "c", "command": "true", "stall_minutes": 5}
    with pytest.raises(
        Refused, match="stall_minutes, permissions and on_denial apply to agent nodes only"
    ):
        validate_definition({"name": "g", "workdir": "/w", "nodes": [command]})


def test_the_config_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path))
    assert load_stall_minutes() == 60
    config = tmp_path / "config.toml"
    config.write_text("[agents]\nstall_minutes = 0\n")
    assert load_stall_minutes() == 0
    for text, problem in [
        ("[agents]\nstall_minutes = -5\n", "agents.stall_minutes: -5 is out of range"),
        ('[agents]\nstall_minutes = "soon"\n', "agents.stall_minutes: 'soon' is not a number"),
        ("[agents]\nstal_minutes = 5\n", "agents.stal_minutes: unknown key"),
        ("agents = 5\n", "'agents' must be a table"),
    ]:
        config.write_text(text)
        with pytest.raises(Refused, match=problem):
            load_stall_minutes()
