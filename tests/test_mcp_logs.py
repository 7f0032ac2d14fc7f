"""MCP ``graph`` ``logs`` as a client without the SDK speaks to it: ``canopy mcp`` over its
stdio with hand-written JSON-RPC, on a run whose node runs and logs are written straight
into the store and the data dir (no Temporal). The CLI is the model: the node runs are
the records ``canopy graph logs --json`` prints, cut to the last ``limit`` lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from canopy.paths import run_log_dir
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.cli_helpers import run_canopy
from tests.conftest import insert, make_specs
from tests.engine import fake_node, make_graph
from tests.test_graph_logs import CLAUDE_STREAM
from tests.test_graphs import insert_run
from tests.test_mcp import RawClient


@pytest.fixture
def mcp(canopy_home: Path) -> Iterator[RawClient]:
    """An initialized raw connection to ``canopy mcp`` on this test's data dir."""
    client = RawClient(canopy_home)
    try:
        client.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        client.notify("notifications/initialized")
        yield client
    finally:
        client.close()


def logs(mcp: RawClient, **arguments: Any) -> dict[str, Any]:
    """A ``logs`` answer, checked to be one: its text and structured copy agree."""
    result = mcp.call("graph", action="logs", **arguments)["result"]
    assert result["isError"] is False, result
    (content,) = result["content"]
    assert result["structuredContent"] == {"result": json.loads(content["text"])}
    answer: dict[str, Any] = result["structuredContent"]["result"]
    return answer


def refusal(mcp: RawClient, tool: str = "graph", **arguments: Any) -> str:
    """A refused call's one line."""
    result = mcp.call(tool, **arguments)["result"]
    assert result["isError"] is True, result
    (content,) = result["content"]
    assert "structuredContent" not in result
    line: str = content["text"]
    return line


def cli_records(home: Path, *args: str) -> list[dict[str, Any]]:
    """What ``canopy graph logs ARGS --json`` prints, one record a line."""
    done = run_canopy(home, "graph", "logs", *args, "--json")
    assert (done.code, done.stderr) == (0, ""), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def run_with_logs(store: Store, repo: Path) -> tuple[str, str, str]:
    """Graph ``build``'s run 1: ``implement`` on Claude Code (a recorded stream), then
    ``check`` twice, the second still running with a line still being written. The graph,
    spec and run ids."""
    (spec,) = make_specs(store, "Login page")
    nodes = [fake_node("implement", "FAKE: say hi"), {"name": "check", "command": "true"}]
    graph = make_graph(store, repo, nodes, specs=[spec])
    run_id = insert_run(store, graph, 1, "running")
    launches = [
        ("implement", 1, "claude", "succeeded", CLAUDE_STREAM.read_bytes()),
        ("check", 1, None, "failed", b"\x1b]0;pwned\x07 one\ntwo\nthree\n"),
        ("check", 2, None, "running", b"four\nfive"),
    ]
    with store.transaction() as rows:
        for node_run_id, (node, visit, platform, status, output) in enumerate(launches, 1):
            log = run_log_dir(run_id, "nodes", node_run_id) / "output.log"
            log.parent.mkdir(parents=True)
            log.write_bytes(output)
            ended = status != "running"
            insert(
                rows,
                "node_runs",
                id=node_run_id,
                run_id=run_id,
                spec_id=spec,
                node=node,
                visit=visit,
                platform=platform,
                status=status,
                exit_code=1 if status == "failed" else 0 if ended else None,
                error="exit code 1" if status == "failed" else None,
                log_path=str(log) if ended else None,
                started_at=utcnow(),
                ended_at=utcnow() if ended else None,
            )
    return graph, spec, run_id


def test_logs_answers_graph_logs_json_cut_to_the_last_lines(
    canopy_home: Path, home_store: Store, repo: Path, mcp: RawClient
) -> None:
    graph, spec, run_id = run_with_logs(home_store, repo)
    records = cli_records(canopy_home, "build")
    implement, check, rerun = records
    assert check["lines"] == ["\x1b]0;pwned\x07 one", "two", "three"]
    assert rerun["lines"] == ["four", "five"]  # the line being written too, as the CLI reads it
    total = sum(len(record["lines"]) for record in records)
    whole = {
        "graph_id": graph,
        "graph_name": "build",
        "run_id": run_id,
        "run_number": 1,
        "node_runs": records,
        "lines_omitted": 0,
    }
    assert logs(mcp, graph_id="build") == whole
    assert logs(mcp, graph_id=graph[:10], limit=total) == whole

    # The cut falls inside a node run: it keeps its lines after the cut; the node runs
    # wholly before it are left out.
    cut = logs(mcp, graph_id="build", limit=3)
    assert cut["node_runs"] == [{**check, "lines": ["three"]}, rerun]
    assert cut["lines_omitted"] == total - 3
    exactly = logs(mcp, graph_id="build", limit=2)  # the cut falls right after check's lines
    assert (exactly["node_runs"], exactly["lines_omitted"]) == ([rerun], total - 2)
    tail = logs(mcp, graph_id="build", limit=6)  # implement's last line, and all after it
    assert tail["node_runs"] == [{**implement, "lines": implement["lines"][-1:]}, check, rerun]
    assert len(implement["lines"]) > 1 and tail["lines_omitted"] == total - 6

    # The CLI's filters and --raw, as arguments.
    raw = logs(mcp, graph_id="build", spec_id=spec[:9], node="implement", raw=True, limit=10_000)
    assert raw["node_runs"] == cli_records(canopy_home, "build", "--node", "implement", "--raw")
    assert raw["node_runs"][0]["lines"] == CLAUDE_STREAM.read_text().splitlines()
    assert logs(mcp, graph_id="build", node="deploy")["node_runs"] == []

    # What an agent printed arrives as JSON escapes it, never as a raw escape character.
    text = mcp.call("graph", action="logs", graph_id="build", node="check")["result"]
    assert "\\u001b]0;pwned\\u0007 one" in text["content"][0]["text"]

    listed = mcp.request("tools/list")["result"]["tools"]
    (schema,) = [tool["outputSchema"] for tool in listed if tool["name"] == "graph"]
    jsonschema.validate({"result": whole}, schema)


def test_logs_of_a_graph_that_never_ran_and_the_refusals(
    canopy_home: Path, home_store: Store, repo: Path, mcp: RawClient
) -> None:
    graph = make_graph(home_store, repo, [{"name": "check", "command": "true"}], name="tmp")
    assert logs(mcp, graph_id="tmp") == {
        "graph_id": graph,
        "graph_name": "tmp",
        "run_id": None,
        "run_number": None,
        "node_runs": [],
        "lines_omitted": 0,
    }
    for limit in (0, 10_001):
        assert refusal(mcp, action="logs", graph_id="tmp", limit=limit) == (
            f"limit: {limit} is out of range; it must be between 1 and 10000"
        )
    for args, arguments in (
        (["nope"], {"graph_id": "nope"}),
        (["tmp", "--spec", "spec-nope"], {"graph_id": "tmp", "spec_id": "spec-nope"}),
    ):
        cli = run_canopy(canopy_home, "graph", "logs", *args)
        assert cli.code == 1
        assert cli.stderr == f"error: {refusal(mcp, action='logs', **arguments)}\n"
    assert refusal(mcp, action="logs") == "graph: action 'logs' needs graph_id"
    assert refusal(mcp, action="list", node="check") == "graph: action 'list' does not take node"
    assert refusal(mcp, action="logs", graph_id="tmp", raw="yes") == (
        'graph: argument raw must be a boolean, not a string ("yes")'
    )
    assert refusal(mcp, action="logs", graph_id="tmp", limit=2.5) == (
        "graph: argument limit must be an integer, not a number (2.5)"
    )
