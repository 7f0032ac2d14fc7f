"""The cost and usage ledger: every node run and agent hook run records
what its harness reported it used; ``graph info`` shows it per node run with totals per
spec and per run, ``canopy usage`` sums it by platform and model, and the run's Temporal UI
details show the running total."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.errors import Refused
from canopy.ops.graph_info import stored_graph_info
from canopy.ops.usage import since_cutoff, usage_report
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.cli_helpers import run_canopy
from tests.conftest import insert, make_specs
from tests.engine import make_graph, settle, temporal
from tests.test_cli import ok

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("since", "back"),
    [
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("30m", timedelta(minutes=30)),
        ("90s", timedelta(seconds=90)),
        ("2w", timedelta(weeks=2)),
        (" 1h ", timedelta(hours=1)),
    ],
)
def test_since_reaches_back_by_its_duration(since: str, back: timedelta) -> None:
    assert since_cutoff(since, NOW) == NOW - back


@pytest.mark.parametrize(
    ("since", "said"),
    [
        ("yesterday", "--since: expected a duration like 24h, 7d, 30m or 2w, got 'yesterday'"),
        ("24", "--since: expected a duration like 24h, 7d, 30m or 2w, got '24'"),
        ("-3h", "--since: expected a duration like 24h, 7d, 30m or 2w, got '-3h'"),
        ("1.5h", "--since: expected a duration like 24h, 7d, 30m or 2w, got '1.5h'"),
        (
            "5300w",
            "--since: 5300w reaches back too far; it must be between 0 and 36500 days (100 years)",
        ),
    ],
)
def test_a_bad_since_is_one_line_naming_it(since: str, said: str) -> None:
    with pytest.raises(Refused) as refused:
        since_cutoff(since, NOW)
    assert str(refused.value) == said


def _ledger(store: Store, tmp_path: Path) -> dict[str, str]:
    """Two graphs' runs with node runs and hook runs as the engine records them: agent
    runs with usage, a command node with none, one run that ended two days ago."""
    check = [{"name": "check", "command": "true"}]
    build = make_graph(store, tmp_path, check, "build")
    review = make_graph(store, tmp_path, check, "rev")
    now = utcnow()
    records: list[tuple[str, str, dict[str, Any]]] = [
        ("run-a", "claude", {"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.1}),
        ("run-a", "claude", {"input_tokens": 10, "cache_read_tokens": 5000, "cost_usd": 0.2}),
        ("run-a", "codex", {"input_tokens": 70, "output_tokens": 7, "turns": 1}),
        ("run-old", "claude", {"input_tokens": 1, "output_tokens": 1, "cost_usd": 9.0}),
    ]
    with store.transaction() as rows:
        for run_id, graph_id, started in (("run-a", build, now), ("run-old", review, now)):
            insert(
                rows,
                "runs",
                id=run_id,
                graph_id=graph_id,
                number=1,
                workdir=str(tmp_path),
                workflow_id=run_id,
                status="completed",
                started_at=started,
            )
        for run_id, platform, used in records:
            insert(
                rows,
                "node_runs",
                run_id=run_id,
                spec_id="spec-x",
                node="n",
                visit=1,
                platform=platform,
                status="succeeded",
                model="opus" if platform == "claude" else None,
                started_at=now,
                ended_at=now,
                **used,
            )
        insert(  # a command node: nothing reported, nothing counted
            rows,
            "node_runs",
            run_id="run-a",
            spec_id="spec-x",
            node="check",
            visit=1,
            status="succeeded",
            ended_at=now,
            started_at=now,
        )
        insert(
            rows,
            "hook_runs",
            graph_id=build,
            run_id="run-a",
            event="on_completed",
            hook_index=0,
            hook_config={"platform": "gemini", "prompt": "p"},
            platform="gemini",
            status="succeeded",
            fire_key="k",
            started_at=now,
            ended_at=now,
            input_tokens=3,
            output_tokens=4,
            model="gemini-3-pro",
        )
        rows(
            "UPDATE node_runs SET ended_at = :ended_at WHERE run_id = 'run-old'",
            {"ended_at": now - timedelta(days=2)},
        )
    return {"build": build, "rev": review}


@pytest.mark.store
def test_usage_sums_by_platform_and_model_within_the_window(store: Store, tmp_path: Path) -> None:
    graphs = _ledger(store, tmp_path)
    everything = usage_report(store)
    assert [
        (row["platform"], row["model"], row["runs"], row["input_tokens"], row["cost_usd"])
        for row in everything["by_platform_and_model"]
    ] == [
        ("claude", "opus", 3, 1011, 9.3),
        ("codex", None, 1, 70, None),
        ("gemini", "gemini-3-pro", 1, 3, None),
    ]
    assert everything["total"] == {
        "runs": 5,
        "input_tokens": 1084,
        "output_tokens": 212,
        "cache_read_tokens": 5000,
        "cache_write_tokens": None,
        "cost_usd": 9.3,
        "turns": 1,
        "duration_ms": None,
    }
    recent = usage_report(store, since="24h")
    assert recent["total"]["runs"] == 4
    assert recent["total"]["cost_usd"] == 0.3, "summed floats are rounded to money"
    assert recent["since"] is not None
    only = usage_report(store, graph="rev")
    assert only["graph_id"] == graphs["rev"]
    assert [row["platform"] for row in only["by_platform_and_model"]] == ["claude"]
    nothing = usage_report(store, since="1h", graph="rev")
    assert nothing["by_platform_and_model"] == []
    assert nothing["total"]["runs"] == 0
    assert nothing["total"]["input_tokens"] is None  # unknown, not a made-up zero


@pytest.mark.store
def test_usage_refuses_an_unknown_graph(store: Store) -> None:
    with pytest.raises(Refused, match="no graph matches 'nope'"):
        usage_report(store, graph="nope")


@pytest.mark.server
async def test_a_fake_run_records_usage_that_graph_info_and_canopy_usage_show(
    serving: Client,
    home_store: Store,
    canopy_home: Path,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Claude prices its run, Codex only counts tokens, a command reports nothing, and an
    agent hook's usage counts toward the run. The run continues as new after each spec,
    and its running total goes with it."""
    monkeypatch.setenv("CANOPY_SPECS_PER_EXECUTION", "1")
    store = home_store
    alpha, beta = make_specs(store, "alpha", "beta")
    nodes = [
        {"name": "implement", "platform": "claude", "prompt": "FAKE: usage 1200 340 5000 0.25"},
        {"name": "review", "platform": "codex", "prompt": "FAKE: usage 100 20 50"},
        {"name": "check", "command": "true"},
    ]
    hook = {"platform": "gemini", "prompt": "FAKE: usage 7 3"}
    graph = make_graph(store, repo, nodes, specs=[alpha, beta], hooks={"on_completed": [hook]})
    settled = await settle(serving, store, graph)
    assert settled["status"] == "completed"

    info = stored_graph_info(store, graph)
    used = {
        (n.spec_name, n.node): (n.input_tokens, n.output_tokens, n.cache_read_tokens, n.cost_usd)
        for n in info.node_runs
    }
    assert used == {
        ("alpha", "implement"): (1200, 340, 5000, 0.25),
        ("alpha", "review"): (100, 20, 50, None),
        ("alpha", "check"): (None, None, None, None),
        ("beta", "implement"): (1200, 340, 5000, 0.25),
        ("beta", "review"): (100, 20, 50, None),
        ("beta", "check"): (None, None, None, None),
    }
    claude_run = next(n for n in info.node_runs if n.node == "implement")
    assert (claude_run.model, claude_run.turns, claude_run.duration_ms) == ("fake-model", 1, 12)
    assert [
        (s.spec_name, s.runs, s.input_tokens, s.output_tokens, s.cost_usd) for s in info.spec_usage
    ] == [("alpha", 2, 1300, 360, 0.25), ("beta", 2, 1300, 360, 0.25)]
    (hook_run,) = info.completion_hook_runs
    assert (hook_run.platform, hook_run.input_tokens, hook_run.output_tokens) == ("gemini", 7, 3)
    (run,) = info.runs
    assert (run.input_tokens, run.output_tokens, run.cost_usd) == (2607, 723, 0.5)

    shown = ok(run_canopy(canopy_home, "graph", "info", "build")).stdout
    assert "1.2k in · 340 out · 5k cache read · $0.2500" in shown
    assert "Usage by spec (latest run)" in shown
    assert (
        json.loads(ok(run_canopy(canopy_home, "graph", "info", "build", "--json")).stdout)["runs"][
            0
        ]["cost_usd"]
        == 0.5
    )

    report = json.loads(ok(run_canopy(canopy_home, "usage", "--since", "1h", "--json")).stdout)
    assert [
        (row["platform"], row["runs"], row["input_tokens"], row["cost_usd"])
        for row in report["by_platform_and_model"]
    ] == [("claude", 2, 2400, 0.5), ("codex", 2, 200, None), ("gemini", 1, 7, None)]
    table = ok(run_canopy(canopy_home, "usage", "--graph", "build")).stdout
    assert "2,607" in table and "$0.5000" in table

    details = await temporal(
        serving, "workflow", "metadata", "--workflow-id", settled["workflow_id"]
    )
    # the on_completed agent hook fired after the summary was written, and joined the total
    assert "Used so far: 2,607 input, 723 output, 10,100 cache read tokens · $0.5000" in details
    assert run.summary is not None
    assert run.summary["usage"]["input_tokens"] == 2600
