"""The cost and usage ledger (issue 15, item 6): every node run and agent hook run records
what its harness reported it used; ``graph info`` shows it per node run with totals per
spec and per run."""

import json
from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.ops.graph_info import stored_graph_info
from canopy.store.engine import Store
from tests.cli_helpers import run_canopy
from tests.conftest import make_specs
from tests.engine import make_graph, settle
from tests.test_cli import ok


@pytest.mark.server
async def test_a_fake_run_records_usage_that_graph_info_shows(
    serving: Client, home_store: Store, canopy_home: Path, repo: Path
) -> None:
    """Claude prices its run, Codex only counts tokens, a command reports nothing, and an
    agent hook's usage counts toward the run."""
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
