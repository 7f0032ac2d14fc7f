"""Workers on several hosts: each graph's nodes run where its workdir is.

Two real worker processes with different ``CANOPY_HOST``s serve one dev server and one
store (Postgres when the run has one, as a deployment at scale would). Both serve the
shared main queue; each serves its own ``canopy-agents@<host>`` queue. SIGKILLing one
host's worker mid-node leaves the other host's run untouched; when the worker returns,
its run adopts the node still running and finishes, every spec once.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from canopy.ops import graphs, queues, runs
from canopy.store.engine import Store
from tests.conftest import make_specs
from tests.daemons import TIMEOUT, Daemons
from tests.engine import eventually, file_lines, git_repo, node_run_of

pytestmark = pytest.mark.server
HOSTS = ("alpha", "beta")


@pytest.fixture
def cluster(
    run_store: Store, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemons]:
    """One dev server and a worker per host, all on this test's data dir and store."""
    monkeypatch.setenv("CANOPY_HEARTBEAT_TIMEOUT", "2")  # a killed worker's node is retried soon
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "CANOPY_HOST"):
        monkeypatch.delenv(name, raising=False)
    running = Daemons(canopy_home)
    running.start_server()
    try:
        for host in HOSTS:
            running.start_worker(host)
        yield running
    finally:
        running.stop()


@dataclass(frozen=True)
class HostRun:
    """One host's graph, the queue it drains, and what its node leaves behind."""

    graph: str
    queue: str
    specs: list[str]
    effects: Path
    """Each node run appends its spec's id here, so a node run twice shows."""
    gate: Path
    """The node runs until this file exists."""


def gated_run(store: Store, host: str, tmp_path: Path) -> HostRun:
    """A graph whose workdir is on ``host``, with a queue of its own two specs."""
    workdir = git_repo(tmp_path / f"repo-{host}")
    effects, gate = tmp_path / f"effects-{host}.log", tmp_path / f"gate-{host}"
    command = f"echo {{{{spec_id}}}} >> {effects}; while [ ! -e {gate} ]; do sleep 0.05; done"
    node = {"name": "work", "command": command}
    graph = graphs.graph_create(
        store, {"name": f"on-{host}", "workdir": str(workdir), "nodes": [node]}
    )["id"]
    queue = queues.queue_create(store, f"q-{host}")["id"]
    spec_ids = make_specs(store, f"{host}-1", f"{host}-2")
    for spec_id in spec_ids:
        queues.queue_add_spec(store, queue, spec_id)
    return HostRun(graph, queue, spec_ids, effects, gate)


async def test_each_host_runs_its_own_nodes_and_survives_the_other_losing_its_worker(
    cluster: Daemons, run_store: Store, tmp_path: Path
) -> None:
    store = run_store
    hosts = {host: gated_run(store, host, tmp_path) for host in HOSTS}
    for host, run in hosts.items():
        started = await runs.graph_run(store, run.graph, queue=run.queue, host=host)
        assert started["host"] == host
    for host, run in hosts.items():
        first_node = partial(node_run_of, store, run.specs[0], "running")
        await eventually(first_node, f"{host}'s first node to run", TIMEOUT)

    cluster.kill_worker("alpha")  # mid-node: its process lives on, detached
    hosts["beta"].gate.touch()
    settled = await runs.wait_until_settled(store, hosts["beta"].graph, TIMEOUT)
    assert settled["status"] == "completed", "beta's run goes on without alpha's worker"
    assert graphs.graph_get(store, hosts["alpha"].graph)["status"] == "running"

    cluster.start_worker("alpha")
    hosts["alpha"].gate.touch()
    settled = await runs.wait_until_settled(store, hosts["alpha"].graph, TIMEOUT)
    assert settled["status"] == "completed", "alpha's run finishes once its worker is back"

    for host, run in hosts.items():
        assert file_lines(run.effects) == run.specs, f"{host}: every spec's node ran once"
        node_runs = graphs.graph_get(store, run.graph)["node_runs"]
        assert [(n["spec_id"], n["status"], n["host"]) for n in node_runs] == [
            (spec_id, "succeeded", host) for spec_id in run.specs
        ], f"{host}: one node run per spec, each on {host}"
