"""Budgets that pause: a graph's ``budget`` is checked against what the run (and the spec)
spent before every node launch; once reached, the run starts no new node but parks with a
``budget`` blocker, fires ``on_blocked`` once and shows ``CanopyBlocker='budget'`` in the
Temporal UI, until a raised budget and a continue let it go on. Claude Code is told what
the node may still spend."""

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.budget import BudgetState, Limits, Spent, reached, remaining_usd
from canopy.errors import Refused
from canopy.ops import control, graphs, runs
from canopy.platforms import get_platform
from canopy.store.engine import Store
from tests.conftest import graph_state, make_specs
from tests.engine import agent_runs, eventually, fake_node, file_lines, make_graph, make_queue
from tests.test_signals import TIMEOUT
from tests.test_temporal_ui import listed

store = pytest.fixture(lambda home_store: home_store)

SPEC_COST = "FAKE: usage 1000 200 0 0.6\nFAKE: commit {{spec_id}}"
"""Each spec's one node reports 1,200 tokens at $0.60."""


def _blocker(store: Store, graph: str) -> dict[str, Any]:
    found: dict[str, Any] = graph_state(store, graph)["blocker"] or {}
    return found


@pytest.mark.server
async def test_a_run_pauses_when_its_budget_is_reached_until_it_is_raised(
    serving: Client, store: Store, repo: Path, record: Path, tmp_path: Path
) -> None:
    alpha, beta = make_specs(store, "alpha", "beta")
    queue = make_queue(store, [alpha, beta])
    blocked_log = tmp_path / "blocked.log"
    graph = make_graph(
        store,
        repo,
        [fake_node("implement", SPEC_COST)],
        budget={"run": {"usd": 0.5}},
        hooks={"on_blocked": [{"command": f"echo {{{{node}}}} >> {blocked_log}"}]},
    )
    started = await runs.graph_run(store, graph, queue=queue)
    paused = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert paused["status"] == "paused", paused
    blocker = paused["blocker"]
    assert blocker["kind"] == "budget"
    assert blocker["message"] == (
        "budget reached: spent $0.6000 of $0.5000 (run); "
        f"paused before node implement of spec beta ({beta})"
    )
    assert (blocker["scope"], blocker["unit"], blocker["spent"], blocker["limit"]) == (
        "run",
        "usd",
        0.6,
        0.5,
    )
    assert blocker["next_spec"]["id"] == beta
    assert "`canopy graph edit build --file FILE`" in blocker["ways_out"][0]
    assert "`canopy graph continue build`" in blocker["ways_out"][0]
    launches = agent_runs(record)
    assert len(launches) == 1, "beta's node never launched"
    assert launches[0]["argv"][-2:] == ["--max-budget-usd", "0.5"]
    await eventually(lambda: file_lines(blocked_log), "on_blocked")
    found = await eventually(
        lambda: listed(serving, "CanopyBlocker='budget'"), "the run in the visibility store"
    )
    assert started["workflow_id"] in found

    # raised, but not enough: the continue parks again with a fresh blocker, no new hook
    graphs.graph_edit(store, graph, {"budget": {"run": {"usd": 0.55}}})
    await control.graph_continue(store, graph, wait=0)
    await eventually(lambda: _blocker(store, graph).get("limit") == 0.55, "a fresh blocker")
    assert graph_state(store, graph)["status"] == "paused"

    graphs.graph_edit(store, graph, {"budget": {"run": {"usd": 5, "tokens": 1_000_000}}})
    await control.graph_continue(store, graph, wait=0)
    handle = serving.get_workflow_handle(started["workflow_id"])
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "completed"
    assert file_lines(blocked_log) == ["implement"], "on_blocked fired once"
    beta_launch = agent_runs(record)[1]
    assert beta_launch["argv"][-2:] == ["--max-budget-usd", "4.4"]
    info = graphs.graph_get(store, graph)
    assert info["budget"] == {"run": {"usd": 5.0, "tokens": 1_000_000}}
    assert info["budget_spent"] == {"usd": 1.2, "tokens": 2400, "no_cost": 0, "no_tokens": 0}


@pytest.mark.server
async def test_a_spec_budget_pauses_between_two_nodes_of_the_spec(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    """A per-spec token budget reached by the first node stops the second; the spec goes
    back to pending, and a skip passes it over to the next, which has a budget of its own."""
    alpha, beta = make_specs(store, "alpha", "beta")
    queue = make_queue(store, [alpha, beta])
    nodes = [fake_node("plan", SPEC_COST), {"name": "check", "command": "true"}]
    graph = make_graph(store, repo, nodes, budget={"spec": {"tokens": 1000}})
    started = await runs.graph_run(store, graph, queue=queue)
    paused = await runs.wait_until_settled(store, graph, TIMEOUT)
    blocker = paused["blocker"]
    assert blocker["message"] == (
        f"budget reached: spent 1,200 tokens of 1,000 tokens (spec alpha ({alpha})); "
        f"paused before node check of spec alpha ({alpha})"
    )
    assert blocker["node"] == "check"
    assert any("--mode skip_next_spec" in way for way in blocker["ways_out"])
    assert not any("--max-budget-usd" in launch["argv"] for launch in agent_runs(record))
    await control.graph_continue(store, graph, mode="skip_next_spec", wait=0)
    await eventually(
        lambda: (_blocker(store, graph).get("next_spec") or {}).get("id") == beta,
        "the same limit, reached by beta",
    )
    assert [launch["prompt"].splitlines()[0] for launch in agent_runs(record)] == [
        "alpha",
        "beta",
    ]
    await control.graph_reset(store, graph)
    handle = serving.get_workflow_handle(started["workflow_id"])
    assert await asyncio.wait_for(handle.result(), TIMEOUT) == "reset"


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        ({"run": {"usd": 0}}, "budget.run.usd: 0 is out of range; it must be between 0.01"),
        ({"run": {"usd": "5"}}, "budget.run.usd: Input should be a valid number"),
        ({"run": {"tokens": 1.5}}, "budget.run.tokens: Input should be a valid integer"),
        ({"run": {"dollars": 5}}, "unknown field budget.run.dollars"),
        ({"total": {"usd": 5}}, "unknown field budget.total"),
        ({"run": {}}, "budget.run: set usd, tokens or both"),
        ({}, "budget: set run, spec or both (or null for no budget)"),
    ],
)
def test_a_bad_budget_is_refused_in_one_line_and_nothing_is_written(
    home_store: Store, repo: Path, budget: dict[str, Any], said: str
) -> None:
    graph = make_graph(home_store, repo, [{"name": "check", "command": "true"}])
    before = graphs.graph_get(home_store, graph)
    with pytest.raises(Refused) as refused:
        graphs.graph_edit(home_store, graph, {"budget": budget})
    assert str(refused.value).startswith(f"graph definition refused: {said}")
    assert "\n" not in str(refused.value)
    assert graphs.graph_get(home_store, graph) == before
    with pytest.raises(Refused):
        make_graph(home_store, repo, [{"name": "check", "command": "true"}], "other", budget=budget)
    assert [g["name"] for g in graphs.graph_list(home_store)] == ["build"]


def test_a_budget_is_reached_at_its_limit_run_first_and_leaves_the_least_to_spend() -> None:
    state = BudgetState(
        run=Limits(usd=5.0, tokens=1000),
        spec=Limits(usd=1.0),
        run_spent=Spent(usd=4.5, tokens=999, no_cost=2),
        spec_spent=Spent(usd=0.25),
    )
    assert reached(state) is None
    assert remaining_usd(state) == 0.5
    over = reached(BudgetState(run=Limits(tokens=1000), run_spent=Spent(tokens=1000)))
    assert over is not None and (over.scope, over.unit, over.spent) == ("run", "tokens", 1000)
    spec_over = reached(BudgetState(spec=Limits(usd=1.0), spec_spent=Spent(usd=1.0, no_cost=3)))
    assert spec_over is not None and (spec_over.scope, spec_over.unknown) == ("spec", 3)
    assert remaining_usd(BudgetState(run=Limits(tokens=5))) is None
    assert reached(None) is None


def test_claude_is_told_what_the_node_may_spend_and_other_clis_are_not() -> None:
    assert get_platform("claude").budget_flags(0.4) == ["--max-budget-usd", "0.4"]
    assert get_platform("claude").budget_flags(0) == ["--max-budget-usd", "0.000001"]
    assert get_platform("codex").budget_flags(0.4) == []
    assert get_platform("gemini").budget_flags(0.4) == []
