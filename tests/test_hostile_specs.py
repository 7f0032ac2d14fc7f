"""Hostile and huge spec text through a real run: no shell ever reads it, and a prompt of
any size reaches the agent. Real dev server, real shells, the fake agent."""

from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.ops import graphs, specs
from canopy.store.engine import Store
from tests import engine
from tests.conftest import body
from tests.engine import agent_runs, fake_node, file_lines, settle

pytestmark = pytest.mark.server
TIMEOUT = 60.0


store = engine.home_store
"""Here the store is the one the worker's activities write: this test's data dir."""


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
    settled = await settle(serving, store, graph)
    assert settled["status"] == "completed", settled
    assert list(tmp_path.glob("pwned*")) == [], "nothing in the spec ran"
    assert file_lines(out) == [name, summary, summary]
    assert file_lines(log) == [f"done {name}", f"sq {name}", name]


async def test_a_prompt_of_any_size_reaches_the_agent(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    context = "A line of context that an agent should read.\n" * 7000  # ~300 KiB
    spec = specs.spec_create(store, "big", body("big", context=context))["id"]
    node = fake_node("implement", "{{context}}\nFAKE: say read it all")
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [node], "specs": [spec]}
    )["id"]
    settled = await settle(serving, store, graph)
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
    settled = await settle(serving, store, graph)
    assert settled["status"] == "failed"
    (node_run,) = graphs.graph_get(store, graph)["node_runs"]
    assert node_run["status"] == "failed"
    assert "marker {{context}} in command holds 195 KiB" in node_run["error"]
