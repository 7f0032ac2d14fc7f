"""Usage limits and ensemble failover on the time-skipping server: a five-hour
reset passes in moments, then the spec re-runs from the blocked node, resuming its
harness session; ensembles fail over to their next member."""

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.testing import WorkflowEnvironment

from canopy.ops import graphs, queues, runs, specs
from canopy.store.engine import Store
from canopy.timefmt import stored_time, utcnow
from tests.conftest import body
from tests.engine import FAKE_AGENT, agent_runs, eventually

pytestmark = pytest.mark.server
TIMEOUT = 60.0


def node_runs(store: Store) -> list[tuple[str | None, str]]:
    with store.transaction() as rows:
        found = rows("SELECT platform, status FROM node_runs ORDER BY id", {})
    return [(row["platform"], row["status"]) for row in found]


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
        with store.transaction() as rows:
            found = rows("SELECT scheduled_resume_at FROM runs", {})
        value = found[0]["scheduled_resume_at"] if found else None
        return None if value is None else stored_time(value)

    return await eventually(recorded, "the run to schedule a resume", TIMEOUT)


FALLBACK = timedelta(hours=6)
RATE_LIMIT_FIRST_WAIT = timedelta(minutes=1)
LIMIT_CASES = [
    # platform, the fake's limit shape, when it says the limit resets, the expected wait
    ("claude", "text", timedelta(hours=5), timedelta(hours=5)),
    ("claude", "event", timedelta(hours=5), timedelta(hours=5)),
    ("claude", "synthetic", timedelta(hours=5), timedelta(hours=5)),
    ("claude", "stderr", timedelta(hours=5), timedelta(hours=5)),
    ("claude", "epoch", timedelta(hours=5), timedelta(hours=5)),
    ("claude", "text", timedelta(days=3), timedelta(days=3)),  # weekly: "resets Mon 9:05pm"
    ("claude", "text", timedelta(days=7, hours=1), timedelta(days=7, hours=1)),  # a date
    ("codex", "at", timedelta(hours=5), timedelta(hours=5)),
    ("codex", "in", timedelta(hours=5), timedelta(hours=5)),
    ("codex", "quota", timedelta(hours=5), FALLBACK),  # no reset given
    ("gemini", "terminal", timedelta(hours=5), timedelta(hours=5)),
    # a bare 429 RESOURCE_EXHAUSTED names no quota window: an API rate limit, backed off
    ("gemini", "resource_exhausted", timedelta(hours=5), RATE_LIMIT_FIRST_WAIT),
]


@pytest.mark.parametrize(("platform", "shape", "reset", "wait"), LIMIT_CASES)
async def test_a_limit_blocked_spec_waits_out_the_reset_then_resumes_its_session(
    time_skipping: WorkflowEnvironment,
    home_store: Store,
    repo: Path,
    record: Path,
    tmp_path: Path,
    platform: str,
    shape: str,
    reset: timedelta,
    wait: timedelta,
) -> None:
    """Each limit the real CLIs print blocks the node until the reset it states (the
    6-hour fallback when a usage window states none, a minute for the first API rate
    limit), then the spec resumes its harness session."""
    marker = tmp_path / "limited-once"
    limit = f"limit-once {marker} {reset.total_seconds():.0f} {shape}"
    node = {
        "name": "implement",
        "platform": platform,
        "prompt": f"FAKE: {limit}\nFAKE: write out.txt x\nFAKE: commit done",
    }
    graph, workflow_id = await start(home_store, repo, {"nodes": [node]})
    resume_at = await scheduled_resume(home_store)
    waits = resume_at.replace(tzinfo=None) - utcnow().replace(tzinfo=None)
    # resets shown to the minute are never later than the real one
    assert wait - timedelta(minutes=2) < waits <= wait, "the reset the platform reported"
    info = await graphs.graph_get_async(home_store, graph)
    assert info["status"] == "running", "a limit wait keeps the graph running"
    assert info["scheduled_resume_at"] is not None
    assert info["consistency_warning"] is None
    (blocked,) = info["node_runs"]
    assert blocked["status"] == "limit_blocked"
    why = {FALLBACK: "the 6-hour fallback", RATE_LIMIT_FIRST_WAIT: "backing off"}.get(
        wait, "resets at "
    )
    assert why in blocked["error"], "the wait says what it is based on"
    handle = time_skipping.client.get_workflow_handle(workflow_id)
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert blocked["error"] in metadata.current_details, "and the Temporal UI's details too"
    await time_skipping.sleep(wait + timedelta(minutes=1))
    settled = await runs.wait_until_settled(home_store, graph, TIMEOUT)
    assert settled["status"] == "completed"
    first, second = agent_runs(record)
    assert second["resumed"] == first["session_id"]
    assert node_runs(home_store) == [(platform, "limit_blocked"), (platform, "succeeded")]
    assert graphs.graph_get(home_store, graph)["scheduled_resume_at"] is None


async def test_an_agent_that_talks_about_limits_is_not_limited(
    time_skipping: WorkflowEnvironment, home_store: Store, repo: Path, record: Path
) -> None:
    """An agent's own words (and a tool's output) about limits are not the CLI's limit."""
    said = "You've hit your session limit · resets 9am (Europe/Berlin). usage limit reached|1"
    node = {
        "name": "implement",
        "platform": "claude",
        "prompt": f"FAKE: say {said}\nFAKE: exit 1",
    }
    graph, _ = await start(home_store, repo, {"nodes": [node]})
    settled = await runs.wait_until_settled(home_store, graph, TIMEOUT)
    assert settled["status"] == "failed"
    assert node_runs(home_store) == [("claude", "failed")]


def always_limited(home: Path, platform: str, shape: str) -> None:
    """Point ``platform`` at a fake agent that always reports a usage limit in ``shape``."""
    config = home / "config.toml"
    text = config.read_text().replace(f'[platforms.{platform}]\nexecutable = "{FAKE_AGENT}"\n', "")
    config.write_text(
        text + f'\n[platforms.{platform}]\nexecutable = ["env", "FAKE_AGENT_DIRECTIVES=limit '
        f'18000 {shape}", "{FAKE_AGENT}"]\n'
    )


@pytest.mark.parametrize(
    ("first", "shape", "second"),
    [
        ("claude", "text", "codex"),
        ("claude", "synthetic", "codex"),
        ("claude", "stderr", "gemini"),
        ("codex", "quota", "claude"),
        ("gemini", "resource_exhausted", "claude"),
    ],
)
async def test_an_ensemble_fails_over_to_its_next_member_on_a_limit(
    time_skipping: WorkflowEnvironment,
    canopy_home: Path,
    home_store: Store,
    repo: Path,
    record: Path,
    first: str,
    shape: str,
    second: str,
) -> None:
    """Every limit shape fails over at once, a hard quota with no reset included."""
    always_limited(canopy_home, first, shape)
    node = {"name": "implement", "ensemble": "team", "prompt": "FAKE: commit done"}
    ensembles = {"team": [{"platform": first}, {"platform": second}]}
    _, workflow_id = await start(home_store, repo, {"nodes": [node], "ensembles": ensembles})
    handle = time_skipping.client.get_workflow_handle(workflow_id)
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "completed"
    assert node_runs(home_store) == [(first, "limit_blocked"), (second, "succeeded")]


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
