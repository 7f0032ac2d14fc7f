"""Usage limits (DESIGN §5 ensembles, §6.5) on the time-skipping server: a five-hour
reset passes in moments, then the spec re-runs from the blocked node, resuming its
harness session; ensembles fail over to their next member."""

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from temporalio.testing import WorkflowEnvironment

from canopy.ops import graphs, queues, runs, specs
from canopy.store.engine import Store
from canopy.store.models import NodeRun, Run
from canopy.timefmt import utcnow
from tests.conftest import body
from tests.engine import FAKE_AGENT, agent_runs, eventually

pytestmark = pytest.mark.server
TIMEOUT = 60.0


def node_runs(store: Store) -> list[tuple[str | None, str]]:
    with store.transaction() as db:
        rows = db.execute(select(NodeRun.platform, NodeRun.status).order_by(NodeRun.id))
        return [(platform, status) for platform, status in rows]


async def start(store: Store, repo: Path, graph_definition: dict[str, Any]) -> tuple[str, str]:
    """A one-spec queue through ``graph_definition``; the graph id and workflow id."""
    spec = specs.spec_create(store, "alpha", body("alpha summary"))["id"]
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, spec)
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), **graph_definition})
    started = await runs.graph_run(store, graph["id"], queue=queue)
    return graph["id"], started["workflow_id"]


async def scheduled_resume(store: Store) -> Any:
    """Wait until the run records a scheduled resume; return it."""

    def recorded() -> Any:
        with store.transaction() as db:
            return db.scalar(select(Run.scheduled_resume_at))

    return await eventually(recorded, "the run to schedule a resume", TIMEOUT)


@pytest.mark.parametrize("platform", ["claude", "codex"])
async def test_a_limit_blocked_spec_waits_out_the_reset_then_resumes_its_session(
    time_skipping: WorkflowEnvironment,
    home_store: Store,
    repo: Path,
    record: Path,
    tmp_path: Path,
    platform: str,
) -> None:
    marker = tmp_path / "limited-once"
    node = {
        "name": "implement",
        "platform": platform,
        "prompt": f"FAKE: limit-once {marker}\nFAKE: write out.txt x\nFAKE: commit done",
    }
    graph, _ = await start(home_store, repo, {"nodes": [node]})
    resume_at = await scheduled_resume(home_store)
    hours = (resume_at.replace(tzinfo=None) - utcnow().replace(tzinfo=None)).total_seconds() / 3600
    assert 4.9 < hours <= 5.0, "the reset the platform reported"
    info = await graphs.graph_get_async(home_store, graph)
    assert info["status"] == "running", "a limit wait keeps the graph running"
    assert info["scheduled_resume_at"] is not None
    assert info["consistency_warning"] is None
    await time_skipping.sleep(timedelta(hours=5, minutes=1))
    settled = await runs.wait_until_settled(home_store, graph, TIMEOUT)
    assert settled["status"] == "completed"
    first, second = agent_runs(record)
    assert second["resumed"] == first["session_id"]
    assert node_runs(home_store) == [(platform, "limit_blocked"), (platform, "succeeded")]
    assert graphs.graph_get(home_store, graph)["scheduled_resume_at"] is None


def always_limited(home: Path, platform: str) -> None:
    """Point ``platform`` at a fake agent that always reports a usage limit."""
    config = home / "config.toml"
    config.write_text(
        config.read_text()
        + f'\n[platforms.{platform}]\nexecutable = ["env", "FAKE_AGENT_DIRECTIVES=limit", '
        f'"{FAKE_AGENT}"]\n'
    )


async def test_an_ensemble_fails_over_to_its_next_member_on_a_limit(
    time_skipping: WorkflowEnvironment,
    canopy_home: Path,
    home_store: Store,
    repo: Path,
    record: Path,
) -> None:
    text = (
        (canopy_home / "config.toml")
        .read_text()
        .replace(f'[platforms.claude]\nexecutable = "{FAKE_AGENT}"\n', "")
    )
    (canopy_home / "config.toml").write_text(text)
    always_limited(canopy_home, "claude")
    node = {"name": "implement", "ensemble": "team", "prompt": "FAKE: commit done"}
    ensembles = {"team": [{"platform": "claude"}, {"platform": "codex"}]}
    _, workflow_id = await start(home_store, repo, {"nodes": [node], "ensembles": ensembles})
    handle = time_skipping.client.get_workflow_handle(workflow_id)
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "completed"
    assert node_runs(home_store) == [("claude", "limit_blocked"), ("codex", "succeeded")]


async def test_the_guard_runs_after_a_limit_blocked_spec(
    time_skipping: WorkflowEnvironment, home_store: Store, repo: Path, record: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "limited-once"
    node = {
        "name": "implement",
        "platform": "claude",
        "prompt": f"FAKE: write scratch.txt half\nFAKE: limit-once {marker}\nFAKE: commit done",
    }
    graph, _ = await start(home_store, repo, {"nodes": [node]})
    await scheduled_resume(home_store)
    await time_skipping.sleep(timedelta(hours=5, minutes=1))
    settled = await runs.wait_until_settled(home_store, graph, TIMEOUT)
    assert settled["status"] == "paused", "the limit left the tree dirty: the guard pauses"
    assert settled["blocker"]["kind"] == "dirty_tree"
    assert settled["blocker"]["dirty_paths"] == ["scratch.txt"]
