"""The MCP server (``canopy mcp``, docs/mcp.md).

Driven in-process through ``mcp.Client(server)`` in both of the SDK's in-process modes —
``direct`` (the modern per-request dispatch, no framing) and ``jsonrpc`` (the legacy
initialize handshake over JSON-RPC streams) — and once over real stdio as a subprocess.
The CLI is the model: answers and refusals are compared with what ``canopy … --json``
prints for the same store, the CLI running in-process on a worker thread (its graph
commands call ``asyncio.run``, which needs a thread without a running loop).
"""

import asyncio
import importlib.metadata
import inspect
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent
from temporalio.client import Client as TemporalClient

from canopy.backlog.specformat import SECTION_NAMES
from canopy.cli import main
from canopy.cli.mcp_server.server import build_server
from canopy.cli.mcp_server.tools import TOOLS
from canopy.statuses import SPEC_STATUSES
from canopy.store.engine import Store
from tests.cli_helpers import canopy_env
from tests.conftest import body
from tests.engine import eventually, node_run_of

ROOT = Path(__file__).parent.parent
TOOL_NAMES = [
    "spec",
    "spec_edit",
    "queue",
    "graph",
    "graph_edit",
    "graph_control",
    "session_list",
    "session",
    "project",
    "server",
]
SHORT_SPEC_KEYS = ("id", "name", "status", "workdir", "created_at", "updated_at")
BAD_BODY = "<summary>oops</summary><notes>x</notes>"


@pytest.fixture(params=["direct", "jsonrpc"])
def mode(request: pytest.FixtureRequest) -> str:
    """The SDK's two in-process connections: ``auto`` dispatches directly, ``legacy``
    runs the initialize handshake and JSON-RPC over in-memory streams."""
    return "auto" if request.param == "direct" else "legacy"


def connect(mode: str) -> Client:
    """A client for a fresh server (entered with ``async with`` inside the test, so the
    SDK's task groups open and close in one task)."""
    return Client(build_server(), mode=mode)


def text_of(result: CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent)
    return content.text


async def answer(client: Client, tool: str, **args: Any) -> str:
    """A successful call's text (the CLI's --json line)."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def ok(client: Client, tool: str, **args: Any) -> Any:
    return json.loads(await answer(client, tool, **args))


async def refused(client: Client, tool: str, **args: Any) -> str:
    """A refused call's one line."""
    result = await client.call_tool(tool, args)
    assert result.is_error, text_of(result)
    return text_of(result)


class Cli:
    """The real CLI, in-process; what it printed."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    async def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = await asyncio.to_thread(main.run, list(args))
        out, err = self.capsys.readouterr()
        return code, out, err

    async def json_line(self, *args: str) -> str:
        code, out, err = await self(*args, "--json")
        assert code == 0, err
        return out.rstrip("\n")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], canopy_home: Path) -> Cli:
    return Cli(capsys)


Pair = tuple[list[str], str, dict[str, Any]]


def pair(command: str | list[str], tool: str, **arguments: Any) -> Pair:
    """A CLI command (split on spaces unless given as a list) and the same call over MCP."""
    return (command.split() if isinstance(command, str) else command, tool, arguments)


def write_json(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


# --------------------------------------------------------------------------- the tool list


async def test_every_tool_has_a_description_and_a_typed_schema(
    canopy_home: Path, mode: str
) -> None:
    async with connect(mode) as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == TOOL_NAMES
    verbs = {tool.name: list(tool.verbs) for tool in TOOLS}
    for tool in tools:
        assert tool.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (
            tool.name in ("spec", "graph", "session_list", "project", "server")
        )
        for action in verbs[tool.name]:
            assert f"- {action}(" in tool.description
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["required"] == ["action"]
        action_schema = schema["properties"]["action"]
        assert action_schema.get("enum", [action_schema.get("const")]) == verbs[tool.name]
        for name, prop in schema["properties"].items():
            types = [prop.get("type")] + [arm.get("type") for arm in prop.get("anyOf", [])]
            assert {"string", "integer", "boolean", "array", "object"} & set(types), (
                tool.name,
                name,
            )
            assert prop.get("description"), (tool.name, name)


# --------------------------------------------------------------------------- same as the CLI


async def test_answers_and_refusals_are_the_clis(
    cli: Cli, mode: str, repo: Path, tmp_path: Path
) -> None:
    """Every read and the main refusals, side by side with the CLI on one store state
    (reads and refusals write nothing, so running both leaves the state as it was)."""
    async with connect(mode) as client:
        workdir = str(tmp_path / "app")
        a = await ok(client, "spec_edit", action="create", name="A", body=body(), workdir=workdir)
        b = await ok(client, "spec_edit", action="create", name="B", body=body())
        c = await ok(client, "spec_edit", action="create", name="C", body=body())
        d = await ok(client, "spec_edit", action="create", name="D", body=body())
        a, b, c, d = a["id"], b["id"], c["id"], d["id"]
        await ok(client, "queue", action="create", name="nightly")
        for spec_id, group in ((a, "auth"), (b, None), (c, "auth")):
            await ok(
                client, "queue", action="add_spec", queue_id="nightly", spec_id=spec_id, group=group
            )
        nodes = [{"name": "work", "command": "true"}]
        build = {"name": "build", "workdir": str(repo), "nodes": nodes, "specs": [d]}
        await ok(client, "graph_edit", action="create", definition=build)
        await ok(client, "graph_edit", action="create", definition={"name": "tmp", "nodes": nodes})
        await ok(client, "spec_edit", action="set_status", spec_id=b, status_action="skip")
        invalid = write_json(tmp_path / "invalid.json", {"name": "x"})
        empty = write_json(tmp_path / "empty.json", {})
        taken = write_json(tmp_path / "taken.json", build)

        pairs = [
            pair("spec list", "spec", action="list"),
            pair("spec list --standalone", "spec", action="list", standalone=True),
            pair("spec list --contains a --limit 2", "spec", action="list", contains="a",
                 limit=2),
            pair("spec count --standalone", "spec", action="count", standalone=True),
            pair("project list", "project", action="list"),
            pair("server check", "server", action="check"),
            pair(f"spec list --workdir {workdir} --status pending", "spec", action="list",
                 workdir=workdir, status="pending"),
            pair(f"spec get {a[5:9]}", "spec", action="get", spec_id=a[5:9]),
            pair(f"spec section {a} Goal", "spec", action="section", spec_id=a, section="Goal"),
            pair("queue list", "queue", action="list"),
            pair("queue list nightly", "queue", action="list", queue_id="nightly"),
            pair("graph list", "graph", action="list"),
            pair("graph info build", "graph", action="get", graph_id="build"),
            pair("usage --graph build", "graph", action="usage", graph_id="build"),
            # refusals
            pair("spec get zzz", "spec", action="get", spec_id="zzz"),
            pair("spec get spec-", "spec", action="get", spec_id="spec-"),
            pair("spec list --status done", "spec", action="list", status="done"),
            pair(f"spec section {a} notes", "spec", action="section", spec_id=a, section="notes"),
            pair(["spec", "create", "--name", "x", "--body", BAD_BODY], "spec_edit",
                 action="create", name="x", body=BAD_BODY),
            pair(["spec", "create", "--name", " ", "--body", body()], "spec_edit",
                 action="create", name=" ", body=body()),
            pair(f"spec update {a}", "spec_edit", action="update", spec_id=a),
            pair(f"spec update {a} --workdir /x --clear-workdir", "spec_edit", action="update",
                 spec_id=a, workdir="/x", clear_workdir=True),
            pair(f"spec set-status {a} finish", "spec_edit", action="set_status", spec_id=a,
                 status_action="finish"),
            pair(f"spec set-status {d} skip", "spec_edit", action="set_status", spec_id=d,
                 status_action="skip"),
            pair(f"spec delete {d}", "spec_edit", action="delete", spec_id=d),
            pair(["queue", "create", ""], "queue", action="create", name=""),
            pair(f"queue add nightly {a}", "queue", action="add_spec", queue_id="nightly",
                 spec_id=a),
            pair("queue list nope", "queue", action="list", queue_id="nope"),
            pair(f"queue remove nightly {d}", "queue", action="remove_spec", queue_id="nightly",
                 spec_id=d),
            pair(f"queue reorder nightly {a} {b} {c}", "queue", action="reorder",
                 queue_id="nightly", order=[a, b, c]),
            pair(f"queue reorder nightly {a} {c}", "queue", action="reorder", queue_id="nightly",
                 order=[a, c]),
            pair(f"queue group nightly {d} x", "queue", action="set_group", queue_id="nightly",
                 spec_id=d, group="x"),
            pair("graph info nope", "graph", action="get", graph_id="nope"),
            pair("usage --graph nope", "graph", action="usage", graph_id="nope"),
            pair("usage --since soon", "graph", action="usage", since="soon"),
            pair(f"graph create --file {invalid}", "graph_edit", action="create",
                 definition={"name": "x"}),
            pair(f"graph create --file {taken}", "graph_edit", action="create", definition=build),
            pair(f"graph edit build --file {empty}", "graph_edit", action="update",
                 graph_id="build", definition={}),
            pair("graph delete nope", "graph_edit", action="delete", graph_id="nope"),
            pair("graph run tmp", "graph_control", action="run", graph_id="tmp"),
            pair(f"graph run build --workdir {workdir}", "graph_control", action="run",
                 graph_id="build", workdir=workdir),
            pair("graph run build --queue nope", "graph_control", action="run", graph_id="build",
                 queue_id="nope"),
            pair("graph continue build", "graph_control", action="continue", graph_id="build"),
            pair("graph continue build --mode again", "graph_control", action="continue",
                 graph_id="build", mode="again"),
            pair("graph continue build --node work", "graph_control", action="continue",
                 graph_id="build", node="work"),
            pair("graph pause build", "graph_control", action="pause", graph_id="build"),
            pair("graph stop build", "graph_control", action="stop", graph_id="build"),
            pair("graph reset build", "graph_control", action="reset", graph_id="build"),
        ]  # fmt: skip
        refusals = 0
        for args, tool, arguments in pairs:
            code, out, err = await cli(*args, "--json")
            result = await client.call_tool(tool, arguments)
            if code == 0:
                assert not result.is_error, (args, text_of(result))
                assert text_of(result) == out.rstrip("\n"), args
            else:
                assert code == 1, (args, err)
                assert result.is_error, args
                assert err == f"error: {text_of(result)}\n", args
                refusals += 1
        assert refusals == len(pairs) - 14


async def test_session_tools_answer_and_refuse_as_the_cli(
    cli: Cli, mode: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with connect(mode) as client:
        new = {"action": "new", "platform": "claude", "workdir": str(work)}
        pair_session = await ok(client, "session", name="pair", **new)
        other = await ok(client, "session", **new)
        await ok(client, "session", action="close", session_id=other["id"])
        assert (await ok(client, "session_list", action="list"))["sessions"] == [pair_session]
        pairs = [
            pair("session list", "session_list", action="list"),
            pair("session list --all", "session_list", action="list", include_finished=True),
            pair("session get pair", "session", action="get", session_id="pair"),
            pair("session get pair --transcript", "session", action="get", session_id="pair",
                 transcript=True),
            pair("session recall", "session", action="recall"),
            pair("notifications", "session", action="notifications"),
            pair("notifications --limit 0", "session", action="notifications", limit=0),
            pair(f"session conversations --platform claude --workdir {work}", "session",
                 action="conversations", platform="claude", workdir=str(work)),
            # refusals
            pair(f"session new --platform nope --workdir {work}", "session", action="new",
                 platform="nope", workdir=str(work)),
            pair("session send nobody hi", "session", action="send", session_id="nobody",
                 prompt="hi"),
            pair(f"session send {other['id']} hi", "session", action="send",
                 session_id=other["id"], prompt="hi"),
            pair("session close nobody", "session", action="close", session_id="nobody"),
            pair("session message msg-nope", "session", action="message", message_id="msg-nope"),
            pair("session resume pair", "session", action="resume", session_id="pair"),
            pair("session resume", "session", action="resume"),
            pair("session resume --harness-conversation abc", "session", action="resume",
                 conversation_id="abc"),
        ]  # fmt: skip
        for args, tool, arguments in pairs:
            code, out, err = await cli(*args, "--json")
            result = await client.call_tool(tool, arguments)
            if code == 0:
                assert text_of(result) == out.rstrip("\n"), args
            else:
                assert code == 1, (args, err)
                assert result.is_error and err == f"error: {text_of(result)}\n", args
        resumed = await ok(client, "session", action="resume", session_id=other["id"])
        assert (resumed["id"], resumed["status"]) == (other["id"], "live")


async def test_session_send_is_delivered_by_the_daemon(
    serving: TemporalClient, home_store: Store, repo: Path, mode: str, cli: Cli
) -> None:
    from canopy.ops.session_wake import wait_for_delivery

    async with connect(mode) as client:
        created = await ok(
            client, "session", action="new", platform="claude", name="pair", workdir=str(repo)
        )
        sent = await ok(client, "session", action="send", session_id="pair", prompt="hello")
        assert (sent["status"], sent["session_id"]) == ("queued", created["id"])
        assert sent["provenance"]["source"] == "promptbuilder"
        delivered = await wait_for_delivery(home_store, sent["id"], 60)
        assert delivered["delivery"]["session_id"] == created["id"]
        read = await ok(client, "session", action="message", message_id=sent["id"])
        assert read == delivered and read["delivery"]["reply"] == "fake agent done"
        listed = await ok(client, "session_list", action="list")
        assert listed["sessions"][0]["harness_conversation_id"] is not None
        got = await ok(client, "session", action="get", session_id="pair", transcript=True)
        assert [(t["prompt"], t["reply"]) for t in got["turns"]] == [("hello", "fake agent done")]
        assert await ok(client, "server", action="check") == {"serving": True, "problem": None}
        for args, tool, arguments in (
            pair("session get pair --transcript", "session", action="get", session_id="pair",
                 transcript=True),
            pair("server check", "server", action="check"),
        ):  # fmt: skip
            assert await answer(client, tool, **arguments) == await cli.json_line(*args), args


# --------------------------------------------------------------------------- every action


async def test_spec_edit_actions_answer_what_the_cli_then_shows(
    cli: Cli, mode: str, tmp_path: Path
) -> None:
    async with connect(mode) as client:
        created = await answer(
            client,
            "spec_edit",
            action="create",
            name="Login",
            body=body("Log in"),
            workdir=str(tmp_path),
        )
        spec_id = json.loads(created)["id"]
        assert created == await cli.json_line("spec", "get", spec_id)
        assert json.loads(created)["workdir"] == str(tmp_path)

        updated = await answer(
            client,
            "spec_edit",
            action="update",
            spec_id=spec_id,
            name="Login v2",
            body=body("Log in v2"),
            clear_workdir=True,
        )
        assert updated == await cli.json_line("spec", "get", spec_id)
        assert (json.loads(updated)["name"], json.loads(updated)["workdir"]) == ("Login v2", None)

        skipped = await answer(
            client, "spec_edit", action="set_status", spec_id=spec_id, status_action="skip"
        )
        assert skipped == await cli.json_line("spec", "get", spec_id)
        assert json.loads(skipped)["status"] == "skipped"
        section = await ok(client, "spec", action="section", spec_id=spec_id, section="summary")
        assert section == {"id": spec_id, "section": "summary", "markdown": "Log in v2"}

        await ok(client, "queue", action="create", name="q")
        await ok(client, "queue", action="add_spec", queue_id="q", spec_id=spec_id)
        deleted = await ok(client, "spec_edit", action="delete", spec_id=spec_id)
        queue_id = (await ok(client, "queue", action="list", queue_id="q"))["id"]
        assert deleted == {"id": spec_id, "deleted": True, "removed_from_queues": [queue_id]}
        assert await refused(client, "spec", action="get", spec_id=spec_id) == (
            f"no spec matches {spec_id!r}"
        )
        assert await ok(client, "spec", action="list") == []


async def test_queue_actions_keep_groups_together(cli: Cli, mode: str) -> None:
    async with connect(mode) as client:
        a, b, c = [
            (await ok(client, "spec_edit", action="create", name=n, body=body()))["id"]
            for n in ("login", "changelog", "logout")
        ]
        created = await ok(client, "queue", action="create", name="nightly")
        assert created == {
            "id": created["id"],
            "name": "nightly",
            "members": [],
            "latest_run": None,
        }

        def order(queue: dict[str, Any]) -> list[tuple[str, str | None]]:
            return [(m["spec_id"], m["group"]) for m in queue["members"]]

        await ok(client, "queue", action="add_spec", queue_id="nightly", spec_id=a, group="auth")
        await ok(client, "queue", action="add_spec", queue_id="nightly", spec_id=b)
        added = await answer(
            client, "queue", action="add_spec", queue_id="nightly", spec_id=c, group="auth"
        )
        assert added == await cli.json_line("queue", "list", "nightly")
        assert order(json.loads(added)) == [(a, "auth"), (c, "auth"), (b, None)]

        reordered = await ok(client, "queue", action="reorder", queue_id="nightly", order=[b, a, c])
        assert order(reordered) == [(b, None), (a, "auth"), (c, "auth")]
        cleared = await ok(
            client, "queue", action="set_group", queue_id="nightly", spec_id=a, clear_group=True
        )
        assert order(cleared) == [(b, None), (a, None), (c, "auth")]
        grouped = await ok(
            client, "queue", action="set_group", queue_id="nightly", spec_id=b, group="auth"
        )
        assert order(grouped) == [(a, None), (c, "auth"), (b, "auth")]
        removed = await ok(client, "queue", action="remove_spec", queue_id="nightly", spec_id=c)
        assert order(removed) == [(a, None), (b, "auth")]
        listing = await answer(client, "queue", action="list")
        assert listing == await cli.json_line("queue", "list")
        assert [(q["name"], q["members"]) for q in json.loads(listing)["queues"]] == [
            ("nightly", 2)
        ]


async def test_graph_edit_actions_create_update_with_hooks_and_delete(
    cli: Cli, mode: str, repo: Path
) -> None:
    async with connect(mode) as client:
        (spec_id,) = [(await ok(client, "spec_edit", action="create", name="s", body=body()))["id"]]
        definition = {
            "name": "build",
            "workdir": str(repo),
            "host": "build-1",
            "nodes": [{"name": "work", "command": "true"}],
            "specs": [spec_id[:9]],
        }
        created = await answer(client, "graph_edit", action="create", definition=definition)
        graph_id = json.loads(created)["id"]
        assert created == await cli.json_line("graph", "info", graph_id)
        assert json.loads(created)["specs"][0]["id"] == spec_id
        assert json.loads(created)["host"] == "build-1"

        hooks = {"on_spec_completed": [{"command": "echo {{spec_name}}", "spec_ids": [spec_id]}]}
        updated = await answer(
            client,
            "graph_edit",
            action="update",
            graph_id="build",
            definition={"hooks": hooks, "on_completed": {"command": "echo done"}},
        )
        assert updated == await cli.json_line("graph", "info", "build")
        assert json.loads(updated)["hooks"] == {
            **hooks,
            "on_completed": [{"command": "echo done"}],
        }
        assert json.loads(updated)["host"] == "build-1", "an edit keeps the fields it omits"
        assert await answer(client, "graph", action="get", graph_id=graph_id[:10]) == updated
        listed = await ok(client, "graph", action="list")
        assert [(g["name"], g["specs"], g["status"]) for g in listed] == [("build", 1, "idle")]

        deleted = await ok(client, "graph_edit", action="delete", graph_id="build")
        assert deleted == {
            "id": graph_id,
            "deleted": True,
            "released_specs": [spec_id],
            "deleted_schedules": [],
        }
        assert await ok(client, "graph", action="list") == []


# --------------------------------------------------------------------------- argument errors


ARGUMENT_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("spec", {"action": "fetch"}, "spec: unknown action 'fetch'; one of list, count, get, section"),
    ("spec", {}, "spec: missing argument action"),
    ("spec", {"action": "get"}, "spec: action 'get' needs spec_id"),
    ("spec", {"action": "section"}, "spec: action 'section' needs spec_id, section"),
    ("spec", {"action": "list", "spec_id": "x"}, "spec: action 'list' does not take spec_id"),
    ("spec", {"action": "list", "spec": "x"}, "spec: unknown argument spec"),
    ("spec_edit", {"action": "create", "name": "x"}, "spec_edit: action 'create' needs body"),
    ("spec_edit", {"action": "delete", "spec_id": "x", "clear_workdir": True},
     "spec_edit: action 'delete' does not take clear_workdir"),
    ("queue", {"action": "reorder", "queue_id": "q", "order": "a b"},
     'queue: argument order must be an array, not a string ("a b")'),
    ("queue", {"action": "reorder", "queue_id": "q", "order": '["a"]'},
     'queue: argument order must be an array, not a string ("[\\"a\\"]")'),
    ("queue", {"action": "reorder", "queue_id": "q", "order": ["a", 1]},
     "queue: argument order.1: Input should be a valid string"),
    ("spec", {"action": None},
     "spec: argument action must be one of list, count, get, section, not null"),
    ("spec", {"action": "list", "status": 3},
     "spec: argument status must be one of pending, in_progress, completed, failed, skipped, "
     "not an integer (3)"),
    ("session_list", {"action": "list", "include_finished": "yes"},
     'session_list: argument include_finished must be a boolean, not a string ("yes")'),
    ("session_list", {"action": "list", "include_finished": None},
     "session_list: argument include_finished must be a boolean, not null"),
    ("session", {"action": "notifications", "limit": True},
     "session: argument limit must be an integer, not a boolean (true)"),
    ("session", {"action": "notifications", "limit": 1.5},
     "session: argument limit must be an integer, not a number (1.5)"),
    ("queue", {"action": "set_group", "queue_id": "q", "spec_id": "s"},
     "queue: action 'set_group' needs exactly one of group or clear_group"),
    ("queue", {"action": "set_group", "queue_id": "q", "spec_id": "s", "group": "g",
               "clear_group": True},
     "queue: action 'set_group' needs exactly one of group or clear_group"),
    ("graph", {"action": "list", "graph_id": "g"}, "graph: action 'list' does not take graph_id"),
    ("graph_edit", {"action": "update", "graph_id": "g"},
     "graph_edit: action 'update' needs definition"),
    ("graph_edit", {"action": "create", "definition": "[1]"},
     'graph_edit: argument definition must be an object, not a string ("[1]")'),
    ("graph_edit", {"action": "create", "definition": [1]},
     "graph_edit: argument definition must be an object, not an array ([1])"),
    ("graph_control", {"action": "pause", "graph_id": "g", "mode": "recheck"},
     "graph_control: action 'pause' does not take mode"),
    ("graph_control", {"action": "run"}, "graph_control: action 'run' needs graph_id"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "message"), ARGUMENT_ERRORS)
async def test_a_wrong_or_misplaced_argument_is_one_line_naming_it(
    canopy_home: Path, mode: str, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with connect(mode) as client:
        assert await refused(client, tool, **arguments) == message


# --------------------------------------------------------------------------- runs


async def node_started(store: Store, spec_id: str) -> None:
    """Wait on the store until a node of ``spec_id`` has started (``graph get`` is too slow
    to catch a short node: on a running graph it also asks Temporal how the run is doing)."""
    await eventually(lambda: node_run_of(store, spec_id), f"a node of {spec_id} to start")


@pytest.mark.server
async def test_graph_control_runs_and_steers_a_queue_run(
    serving: TemporalClient, home_store: Store, repo: Path, mode: str
) -> None:
    async with connect(mode) as client:
        a, b = [
            (await ok(client, "spec_edit", action="create", name=n, body=body()))["id"]
            for n in ("alpha", "beta")
        ]
        await ok(client, "queue", action="create", name="nightly")
        for spec_id in (a, b):
            await ok(client, "queue", action="add_spec", queue_id="nightly", spec_id=spec_id)
        # alpha's node takes a second, beta's runs until it is stopped or reset
        work = {"name": "work", "command": f"test {{{{spec_id}}}} = {a} && sleep 1 || sleep 60"}
        definition = {"name": "build", "workdir": str(repo), "nodes": [work]}
        graph_id = (await ok(client, "graph_edit", action="create", definition=definition))["id"]

        started = await ok(
            client, "graph_control", action="run", graph_id="build", queue_id="nightly"
        )
        run_id = started["run_id"]
        assert started == {
            "run_id": run_id,
            "number": 1,
            "graph_id": graph_id,
            "graph_name": "build",
            "queue_id": started["queue_id"],
            "workdir": str(repo),
            "host": started["host"],
            "workflow_id": f"canopy-{graph_id}",
            "status": "running",
        }
        assert await refused(client, "graph_control", action="run", graph_id="build") == (
            f"graph build ({graph_id}) already has an active run {run_id}"
        )
        assert await refused(client, "graph_edit", action="delete", graph_id="build") == (
            f"graph {graph_id} has an active run {run_id} (running); "
            "stop or reset it before deleting the graph"
        )

        await node_started(home_store, a)  # so the pause lands at the boundary after alpha
        paused = await ok(client, "graph_control", action="pause", graph_id="build")
        assert (paused["status"], paused["signal"], paused["note"]) == ("paused", "pause", None)
        assert paused["blocker"]["kind"] == "paused"
        assert paused["blocker"]["next_spec"]["id"] == b

        resumed = await ok(client, "graph_control", action="continue", graph_id="build")
        assert (resumed["status"], resumed["signal"]) == ("running", "continue_run")
        await node_started(home_store, b)  # its node sleeps until stopped
        info = await ok(client, "graph", action="get", graph_id="build")
        assert info["active_run"]["id"] == run_id
        assert info["consistency_warning"] is None

        stopped = await ok(client, "graph_control", action="stop", graph_id="build")
        assert (stopped["status"], stopped["signal"]) == ("paused", "stop")
        assert (stopped["blocker"]["kind"], stopped["blocker"]["node"]) == ("stopped", "work")
        directed = await ok(
            client,
            "graph_control",
            action="continue",
            graph_id="build",
            mode="run_from_node",
            node="work",
            spec_id=b,
        )
        assert directed["status"] == "running"

        reset = await ok(client, "graph_control", action="reset", graph_id="build")
        assert (reset["status"], reset["signal"], reset["run_id"]) == ("idle", "reset", run_id)
        info = await ok(client, "graph", action="get", graph_id="build")
        assert info["runs"][0]["status"] == "reset"
        assert info["queue_progress"]["members"][0] == {
            "spec_id": a,
            "name": "alpha",
            "nodes": ["work"],
            "group": None,
            "outcome": "completed",
        }


# --------------------------------------------------------------------------- stdio


async def test_graph_control_schedules_answer_as_the_cli(
    serving: TemporalClient, cli: Cli, repo: Path, mode: str
) -> None:
    async with connect(mode) as client:
        nodes = [{"name": "work", "command": "true"}]
        definition = {"name": "build", "workdir": str(repo), "nodes": nodes}
        await ok(client, "graph_edit", action="create", definition=definition)
        assert (
            await refused(
                client, "graph_control", action="schedule", graph_id="build", cron="61 * * * *"
            )
            == "cron expression '61 * * * *': minute '61': values must be between 0 and 59"
        )
        created = await ok(
            client,
            "graph_control",
            action="schedule",
            graph_id="build",
            cron="0 2 * * 1-5",
            timezone="Europe/Paris",
        )
        assert (created["cron"], created["timezone"], created["paused"]) == (
            "0 2 * * 1-5",
            "Europe/Paris",
            False,
        )
        schedule_id = created["id"]
        paused = await ok(client, "graph_control", action="pause_schedule", schedule_id=schedule_id)
        assert paused["paused"] is True
        listed = await answer(client, "graph", action="schedules", graph_id="build")
        assert listed == await cli.json_line("schedule", "list", "--graph", "build")
        assert [row["paused"] for row in json.loads(listed)] == [True]
        unpaused = await ok(
            client, "graph_control", action="unpause_schedule", schedule_id=schedule_id[:10]
        )
        assert unpaused["paused"] is False
        deleted = await ok(
            client, "graph_control", action="delete_schedule", schedule_id=schedule_id
        )
        assert deleted == {"id": schedule_id, "graph_id": created["graph_id"], "deleted": True}
        assert await ok(client, "graph", action="schedules") == []


async def test_canopy_mcp_serves_over_stdio(tmp_path: Path) -> None:
    """The real command, as an agent host launches it: initialize, list tools, call one."""
    home = tmp_path / "home"
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "canopy.cli.main", "mcp"],
        env={"CANOPY_HOME": str(home)},
        cwd=ROOT,
    )
    async with Client(server, mode="legacy") as client:
        assert client.server_info is not None and client.server_info.name == "canopy"
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == TOOL_NAMES
        created = await ok(client, "spec_edit", action="create", name="over stdio", body=body())
        assert await ok(client, "spec", action="list") == [
            {key: created[key] for key in SHORT_SPEC_KEYS}
        ]
        assert await refused(client, "spec", action="get", spec_id="zzz") == "no spec matches 'zzz'"
        assert await ok(client, "session_list", action="list") == {"sessions": []}


class RawClient:
    """``canopy mcp`` driven with hand-written JSON-RPC lines over its stdio, as a client
    without the SDK (or the MCP inspector) speaks to it: nothing smooths the answers."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "canopy.cli.main", "mcp"],
            env={**canopy_env(home)},
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.next_id = 0
        self.initialized: dict[str, Any] = {}
        """The server's answer to ``initialize``."""

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response to one request (its ``result`` or ``error`` member and the id)."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        assert self.process.stdout is not None
        while True:  # notifications (logging, progress) may come first
            ready, _, _ = select.select([self.process.stdout], [], [], 60)
            assert ready, f"no answer to {method} within 60 s"
            answer: dict[str, Any] = json.loads(self.process.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A ``tools/call`` response."""
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[RawClient]:
    """An initialized raw connection to a fresh ``canopy mcp``; its initialize result is
    ``raw.initialized``."""
    client = RawClient(tmp_path / "home")
    try:
        client.initialized = client.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )["result"]
        client.notify("notifications/initialized")
        yield client
    finally:
        client.close()


def test_raw_handshake_names_the_version_and_only_the_tools_capability(raw: RawClient) -> None:
    info = raw.initialized["serverInfo"]
    assert (info["name"], info["version"]) == ("canopy", importlib.metadata.version("canopy"))
    assert raw.initialized["capabilities"] == {"tools": {"listChanged": False}}
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        assert raw.request(method)["error"]["code"] == -32601, method  # method not found


def test_raw_unknown_tool_is_a_protocol_error(raw: RawClient) -> None:
    error = raw.call("fetch_specs", action="list")["error"]
    assert error["code"] == -32602
    assert error["message"] == f"unknown tool 'fetch_specs'; the tools are {', '.join(TOOL_NAMES)}"


def test_raw_schemas_list_fixed_values_and_the_result_shape(raw: RawClient) -> None:
    tools = {tool["name"]: tool for tool in raw.request("tools/list")["result"]["tools"]}
    assert list(tools) == TOOL_NAMES

    def choices(tool: str, argument: str) -> list[str]:
        spec = tools[tool]["inputSchema"]["properties"][argument]
        arms = spec.get("anyOf", [spec])
        (values,) = [
            arm.get("enum", [arm.get("const")]) for arm in arms if arm.keys() & {"enum", "const"}
        ]
        return list(values)

    assert choices("spec", "status") == list(SPEC_STATUSES)
    assert choices("spec", "section") == list(SECTION_NAMES)
    assert choices("spec_edit", "status_action") == ["complete", "skip", "reopen"]
    assert choices("graph_control", "mode") == ["recheck", "run_from_node", "skip_next_spec"]
    assert choices("session", "platform") == ["claude", "codex", "gemini", "demo"]
    for tool in TOOLS:
        assert choices(tool.name, "action") == list(tool.verbs)
        output = tools[tool.name]["outputSchema"]
        assert (output["type"], output["required"]) == ("object", ["result"])
    assert tools["spec"]["outputSchema"]["properties"]["result"]["type"] == ["array", "object"]
    assert tools["queue"]["outputSchema"]["properties"]["result"]["type"] == "object"


def test_raw_results_carry_structured_content_matching_the_output_schema(
    raw: RawClient,
) -> None:
    listed = raw.request("tools/list")["result"]["tools"]
    schemas = {tool["name"]: tool["outputSchema"] for tool in listed}
    for tool, arguments in (
        ("spec_edit", {"action": "create", "name": "raw", "body": body()}),
        ("spec", {"action": "list"}),
        ("session_list", {"action": "list", "include_finished": True}),
        ("session", {"action": "notifications", "limit": 2.0}),  # an integer, as JSON counts
        ("graph", {"action": "usage", "since": "24h"}),
        ("spec", {"action": "list", "standalone": True}),
        ("project", {"action": "list"}),
        ("server", {"action": "check"}),
    ):
        result = raw.call(tool, **arguments)["result"]
        assert result["isError"] is False, result
        (content,) = result["content"]
        assert result["structuredContent"] == {"result": json.loads(content["text"])}
        jsonschema.validate(result["structuredContent"], schemas[tool])
    assert raw.call("spec", action="list")["result"]["structuredContent"]["result"][0]["name"] == (
        "raw"
    )
    refusal = raw.call("spec", action="get", spec_id="zzz")["result"]
    assert refusal["isError"] is True
    assert "structuredContent" not in refusal
    assert refusal["content"] == [{"type": "text", "text": "no spec matches 'zzz'"}]


def test_raw_arguments_of_the_wrong_type_are_refused_not_coerced(raw: RawClient) -> None:
    for tool, arguments, message in (
        ("session_list", {"action": "list", "include_finished": "yes"},
         'session_list: argument include_finished must be a boolean, not a string ("yes")'),
        ("session", {"action": "notifications", "limit": True},
         "session: argument limit must be an integer, not a boolean (true)"),
        ("spec", {"action": None},
         "spec: argument action must be one of list, count, get, section, not null"),
        ("queue", {"action": "reorder", "queue_id": "q", "order": '["a"]'},
         'queue: argument order must be an array, not a string ("[\\"a\\"]")'),
    ):  # fmt: skip
        result = raw.call(tool, **arguments)["result"]
        assert result["isError"] is True, (tool, arguments)
        assert result["content"] == [{"type": "text", "text": message}]


def test_other_commands_do_not_import_the_mcp_sdk() -> None:
    """Importing mcp.server costs most of a second; only `canopy mcp` may pay it."""
    probe = "import sys, cli.app; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- docs


def test_the_docs_cover_every_tool_action_and_argument() -> None:
    text = (ROOT / "docs" / "mcp.md").read_text()
    for tool in TOOLS:
        assert f"### `{tool.name}`" in text, tool.name
        for name in [*tool.verbs, *inspect.signature(tool.fn).parameters]:
            assert f"`{name}`" in text, (tool.name, name)


async def test_server_doctor_answers_canopy_doctors_report(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data dir with nothing in it yet: the built-in CLIs, checked as ``canopy doctor``."""
    from tests.model_server.clis import NODE_BIN, isolated_home

    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "fresh"))
    monkeypatch.setenv("PATH", f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}")
    for name, value in isolated_home(tmp_path / "user").items():
        monkeypatch.setenv(name, value)
    async with connect(mode) as client:
        found = await ok(client, "server", action="doctor")
    assert sorted(found) == ["keep_awake", "ok", "platforms", "retired_runs", "root"]
    assert found["retired_runs"] is None, "no server runs for this data dir"
    checked = {platform["platform"]: platform for platform in found["platforms"]}
    assert sorted(checked) == ["claude", "codex", "gemini"]
    for platform in checked.values():
        assert platform["version"] in platform["tested_versions"], platform
        assert [level["level"] for level in platform["levels"]] == ["workspace"]
        assert platform["signed_in"] is False and platform["blocking"] is True
    assert found["ok"] is False
