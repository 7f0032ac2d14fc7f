"""Typed graph parts: each node and hook is one class, chosen from the JSON it is stored as.

The stored JSON does not change (a part dumps back to exactly what was accepted), stored
parts load even where later-tightened input rules would refuse them, and payloads
recorded before the parts were typed (workflow histories, activity tasks in flight) still
load.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from canopy.contracts.graph_run import NodeLaunch, NodeStep
from canopy.graphs.agents import LaunchedAgent, agent_platforms, launched_agents
from canopy.graphs.hookmodels import AgentHook, CommandHook, InteractiveHook, stored_hook
from canopy.graphs.model import validate_definition
from canopy.graphs.nodemodels import AgentConfig, AgentNode, CommandNode, EnsembleNode, stored_node
from canopy.ops.graph_info_schema import graph_info_schema

PARTS: list[tuple[Callable[[dict[str, Any]], BaseModel], dict[str, Any], type]] = [
    (stored_node, {"name": "a", "platform": "claude", "prompt": "p", "max_visits": 3}, AgentNode),
    (stored_node, {"name": "e", "ensemble": "team", "prompt": "p", "max_visits": 3}, EnsembleNode),
    (
        stored_node,
        {"name": "c", "command": "make", "on_failure": "a", "max_visits": 2},
        CommandNode,
    ),
    (stored_hook, {"platform": "claude", "prompt": "p", "timeout_minutes": 30}, AgentHook),
    (stored_hook, {"command": "notify-send done"}, CommandHook),
    (stored_hook, {"prompt": "p", "target_session_name": "s", "spec_ids": ["x"]}, InteractiveHook),
]


@pytest.mark.parametrize(
    ("load", "stored", "kind"), PARTS, ids=[kind.__name__ for *_, kind in PARTS]
)
def test_a_stored_part_is_its_kind_and_dumps_back_unchanged(
    load: Callable[[dict[str, Any]], BaseModel], stored: dict[str, Any], kind: type
) -> None:
    part = load(stored)
    assert type(part) is kind
    assert part.model_dump(exclude_none=True) == stored


def test_null_fields_of_other_kinds_are_accepted_as_not_set() -> None:
    definition = validate_definition(
        {
            "name": "g",
            "nodes": [{"name": "c", "command": "true", "platform": None, "prompt": None}],
            "hooks": {"on_failed": [{"command": "true", "target_session_id": None}]},
        }
    )
    assert isinstance(definition.nodes[0], CommandNode)
    assert isinstance(definition.hooks["on_failed"][0], CommandHook)


def test_stored_parts_load_where_input_rules_were_tightened_since() -> None:
    """Input rules (names, ranges, markers, known platforms) are for definitions being
    accepted: a graph stored before a rule existed must still run."""
    node = stored_node(
        {"name": "x" * 500, "platform": "retired", "prompt": "{{nope}}", "max_visits": 10**6}
    )
    assert isinstance(node, AgentNode) and node.platform == "retired"
    hook = stored_hook({"command": "echo {{nope}}", "spec_ids": []})
    assert isinstance(hook, CommandHook)


def test_a_node_of_no_single_kind_is_refused_even_when_stored() -> None:
    with pytest.raises(ValueError, match="give platform or ensemble, not both"):
        stored_node({"name": "x", "platform": "claude", "ensemble": "t", "prompt": "p"})


def test_payloads_recorded_before_typed_parts_keep_the_members_beside_the_node() -> None:
    """Before typed nodes, load_node put an ensemble's members inside the definition."""
    members = [{"platform": "claude"}, {"platform": "codex", "model": "o3"}]
    node = {"name": "e", "ensemble": "team", "prompt": "p", "ensemble_members": members}
    step = NodeStep.model_validate(
        {
            "name": "e",
            "definition": node,
            "next_node": None,
            "on_failure": None,
            "max_visits": 3,
            "timeout_minutes": None,
        }
    )
    assert isinstance(step.definition, EnsembleNode)
    assert step.ensemble_members == [AgentConfig.model_validate(m) for m in members]
    launch = TypeAdapter(NodeLaunch).validate_json(
        NodeLaunch.model_validate(
            {
                "run_id": "run-1",
                "node_run_id": 1,
                "graph_id": "graph-1",
                "graph_name": "g",
                "spec_id": "spec-1",
                "workdir": "/w",
                "node": node,
                "member": 1,
            }
        ).model_dump_json()
    )
    assert launch.agent() == AgentConfig(platform="codex", model="o3")


def test_an_agent_node_launches_its_own_agent() -> None:
    launch = NodeLaunch(
        run_id="run-1",
        node_run_id=1,
        graph_id="graph-1",
        graph_name="g",
        spec_id="spec-1",
        workdir="/w",
        node=stored_node({"name": "a", "platform": "gemini", "prompt": "p", "effort": "high"}),
    )
    assert launch.agent() == AgentConfig(platform="gemini", effort="high")


def test_the_published_graph_info_schema_is_the_models() -> None:
    """docs/graph-info.schema.json is what GraphInfo serialises to; regenerate it with
    ``python -c 'import json; from canopy.ops.graph_info_schema import graph_info_schema;
    print(json.dumps(graph_info_schema(), indent=2))'``."""
    published = Path(__file__).parent.parent / "docs" / "graph-info.schema.json"
    assert json.loads(published.read_text()) == graph_info_schema()


def test_a_graphs_agents_are_read_by_their_class_with_the_levels_on_the_way() -> None:
    """``graph run`` (which CLIs a run needs) and ``doctor`` (where each platform is used,
    at which level) walk the same agents: agent nodes, ensemble members and agent hooks,
    never command nodes or hooks, with the nearer level first."""
    nodes = [
        {"name": "plan", "platform": "gemini", "prompt": "p", "permissions": "read-only"},
        {"name": "build", "command": "make"},
        {"name": "review", "ensemble": "team", "prompt": "p", "permissions": "workspace"},
    ]
    ensembles = {"team": [{"platform": "codex", "permissions": "full"}, {"platform": "gemini"}]}
    hooks = {
        "on_failed": [{"command": "notify-send failed"}, {"platform": "claude", "prompt": "p"}],
        "on_blocked": [{"prompt": "p", "target_session_name": "s"}],
    }
    assert list(launched_agents(nodes, ensembles, hooks)) == [
        LaunchedAgent("gemini", "node plan", ("read-only",)),
        LaunchedAgent("codex", "node review (ensemble team)", ("full", "workspace")),
        LaunchedAgent("gemini", "node review (ensemble team)", (None, "workspace")),
        LaunchedAgent("claude", "hook on_failed[1]", (None,)),
    ]
    assert agent_platforms(nodes, ensembles, hooks) == ["gemini", "codex", "claude"]
