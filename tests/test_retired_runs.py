"""A run of the retired ``GraphRun`` workflow type still open on the server: ``canopy
doctor`` and ``canopy up`` say in one line how to finish it, and the command that line
gives does (the workflow ends, the graph is idle again, the warning goes).

The run is a workflow of that type on a task queue nobody serves, with the run record
and search attribute a run of the retired type had: it stays open, as one does under a
worker that no longer registers its type.
"""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.testing import WorkflowEnvironment

from canopy.ops import graphs, retired_runs, runs
from canopy.ops.doctor import doctor, report_lines
from canopy.search_attributes import SEARCH_ATTRIBUTE_GRAPH_ID
from canopy.store.engine import Store
from tests.cli_helpers import canopy_env, run_canopy
from tests.conftest import make_specs
from tests.daemons import stop_recorded_daemons
from tests.engine import eventually, make_graph

pytestmark = pytest.mark.server


def worker_log(home: Path) -> str:
    """The worker's log, to say why ``canopy up`` failed."""
    log = home / "logs" / "worker.log"
    return log.read_text() if log.exists() else "(no worker log)"


async def test_doctor_and_up_say_how_to_finish_a_run_of_the_retired_type(
    temporal_env: WorkflowEnvironment,
    canopy_home: Path,
    home_store: Store,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    specs = make_specs(home_store, "alpha")
    graph = make_graph(home_store, repo, [{"name": "check", "command": "true"}], specs=specs)
    recorded = runs.prepare_run(home_store, graph)  # the graph running, as its run left it
    graph_id = SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_GRAPH_ID)
    handle = await client.start_workflow(
        retired_runs.RETIRED_GRAPH_RUN_WORKFLOW,
        id=recorded.workflow_id,
        task_queue=f"retired-{uuid.uuid4().hex}",
        search_attributes=TypedSearchAttributes([SearchAttributePair(graph_id, graph)]),
    )
    command = (
        f"temporal workflow terminate --workflow-id canopy-{graph} --reason 'retired workflow "
        f"type GraphRun' --address {address} --namespace default && canopy graph reset {graph}"
    )
    line = (
        f"1 run of the retired workflow type GraphRun is still open on {address} (namespace "
        "default), and no worker of this Canopy runs it: finish it on the Canopy version that "
        f"started it, or end it and reset its graph: {command}"
    )
    # a host of its own: the worker up starts serves no agents task left by another test
    cli = {"TEMPORAL_ADDRESS": address, "CANOPY_HOST": f"retired-{uuid.uuid4().hex[:8]}"}
    try:
        assert await eventually(retired_runs.check, "the run in the server's list") == line

        report = doctor(home_store)
        assert report.retired_runs == line
        assert f"warning: {line}" in report_lines(report)

        up = run_canopy(canopy_home, "up", env=cli)
        assert up.code == 0, up.stderr + worker_log(canopy_home)
        assert up.stdout.splitlines()[-1] == f"warning: {line}"
        assert run_canopy(canopy_home, "up", "--json", env=cli).json()["retired_runs"] == line
        assert run_canopy(canopy_home, "down", env=cli).code == 0

        bin_dir = str(Path(sys.executable).parent)  # temporal and canopy, as installed
        path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        done = subprocess.run(
            ["sh", "-c", command],
            env=canopy_env(canopy_home, PATH=path, **cli),  # where canopy up found it
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert (await handle.describe()).status == WorkflowExecutionStatus.TERMINATED
        assert graphs.graph_get(home_store, graph)["status"] == "idle"

        async def warning_gone() -> bool:
            return await retired_runs.check() is None

        await eventually(warning_gone, "the warning to go")
        assert doctor(home_store).retired_runs is None
    finally:
        stop_recorded_daemons(canopy_home)
        if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await handle.terminate("test over")
