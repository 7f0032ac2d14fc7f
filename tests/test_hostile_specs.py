"""Hostile and huge spec text through a real run: no shell ever reads it, and a prompt of
any size reaches the agent (issue: trust). Real dev server, real shells, the fake agent."""

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.ops import graphs, runs, specs
from canopy.store.engine import Store
from tests.conftest import body
from tests.engine import agent_runs, fake_node

pytestmark = pytest.mark.server
TIMEOUT = 60.0


@pytest.fixture
def store(home_store: Store) -> Store:
    return home_store


async def run_to_the_end(store: Store, client: Client, graph: str) -> dict[str, Any]:
    """Run the graph over its bound specs; its state once the workflow closed (hooks run)."""
    started = await runs.graph_run(store, graph)
    await client.get_workflow_handle(started["workflow_id"]).result()
    return graphs.graph_get(store, graph)


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_no_spec_text_is_read_by_a_shell_in_command_nodes_or_hooks(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    name = f"$(touch {pwned}-name) x; touch {pwned}-semi"
    summary = f"`touch {pwned}-tick` 'q' \"dq\" $HOME *"
    spec = specs.spec_create(store, name, body(summary))["id"]
    out, log = tmp_path / "node.out", tmp_path / "hooks.log"
    printed = "\"{{spec_name}}\" '{{summary}}' {{summary}}"
    node = {"name": "commit", "command": f"printf '%s\\n' {printed} > {out}"}
    hooks = {
        "on_spec_completed": [
            {"command": f'echo "done {{{{spec_name}}}}" >> {log}'},
            {"command": f"echo 'sq {{{{spec_name}}}}' >> {log}"},
            {"command": f"sh -c 'echo {{{{spec_name}}}}' >> {log}"},
        ]
    }
    graph = graphs.graph_create(
        store,
        {"name": "g", "workdir": str(repo), "nodes": [node], "hooks": hooks, "specs": [spec]},
    )["id"]
    settled = await run_to_the_end(store, serving, graph)
    assert settled["status"] == "completed", settled
    assert list(tmp_path.glob("pwned*")) == [], "nothing in the spec ran"
    assert read_lines(out) == [name, summary, summary]
    assert read_lines(log) == [f"done {name}", f"sq {name}", name]


async def test_a_prompt_of_any_size_reaches_the_agent(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    context = "A line of context that an agent should read.\n" * 7000  # ~300 KiB
    spec = specs.spec_create(store, "big", body("big", context=context))["id"]
    node = fake_node("implement", "{{context}}\nFAKE: say read it all")
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [node], "specs": [spec]}
    )["id"]
    settled = await run_to_the_end(store, serving, graph)
    assert settled["status"] == "completed", settled
    (launch,) = agent_runs(record)
    assert context.strip() in launch["prompt"]
    assert len(launch["prompt"]) > 300_000


async def test_a_command_reading_an_oversized_marker_fails_saying_why(
    serving: Client, store: Store, repo: Path
) -> None:
    context = "x" * 200_000
    spec = specs.spec_create(store, "big", body("big", context=context))["id"]
    nodes = [{"name": "echo", "command": 'printf %s "{{context}}" > /dev/null'}]
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": nodes, "specs": [spec]}
    )["id"]
    settled = await run_to_the_end(store, serving, graph)
    assert settled["status"] == "failed"
    (node_run,) = settled["node_runs"]
    assert node_run["status"] == "failed"
    assert "marker {{context}} in command holds 195 KiB" in node_run["error"]
