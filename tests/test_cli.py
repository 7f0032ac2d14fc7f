"""The CLI as users run it: subprocesses against a temporary ``CANOPY_HOME``."""

import asyncio
import importlib.metadata
import json
import shlex
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from temporalio.client import Client, WorkflowHandle
from typer.core import TyperGroup

from canopy.cli.app import COMMANDS, load_command
from canopy.errors import STORE_RACE, unexpected_error_line
from canopy.ops import runs, sessions
from canopy.ops.notifications import notify
from canopy.ops.session_wake import wait_for_delivery
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from canopy.timefmt import utcnow
from tests.cli_helpers import Result, canopy_env, run_canopy
from tests.conftest import body, insert, make_specs, snapshot, update
from tests.engine import eventually, make_graph, node_run_of
from tests.test_graphs import example


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def ok(result: Result) -> Result:
    assert result.code == 0, result.stderr
    return result


def refused(result: Result, *words: str) -> str:
    """The refusal line; asserts exit 1, exactly one line on stderr, naming ``words``."""
    assert result.code == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]
    return lines[0]


def create_spec(home: Path, name: str, *extra: str) -> str:
    created = ok(
        run_canopy(
            home,
            "spec",
            "create",
            "--name",
            name,
            "--body-file",
            "-",
            *extra,
            "--json",
            stdin=body(f"{name} summary"),
        )
    )
    spec_id: str = created.json()["id"]
    return spec_id


def imported_modules(result: Result) -> set[str]:
    """Top-level packages a ``-X importtime`` run imported."""
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_backlog_and_queue_tour(home: Path) -> None:
    a = create_spec(home, "alpha", "--workdir", "/src/app")
    b = create_spec(home, "beta")
    c = create_spec(home, "gamma")
    queue = ok(run_canopy(home, "queue", "create", "nightly", "--json")).json()["id"]
    ok(run_canopy(home, "queue", "add", queue, a, "--group", "auth"))
    ok(run_canopy(home, "queue", "add", queue, b))
    listing = ok(run_canopy(home, "queue", "add", queue, c, "--group", "auth", "--json")).json()
    assert [m["spec_id"] for m in listing["members"]] == [a, c, b]
    listing = ok(run_canopy(home, "queue", "group", queue, c, "--clear", "--json")).json()
    assert [(m["spec_id"], m["group"]) for m in listing["members"]] == [
        (a, "auth"),
        (c, None),
        (b, None),
    ]
    listing = ok(run_canopy(home, "queue", "reorder", queue, b, c, a, "--json")).json()
    assert [m["spec_id"] for m in listing["members"]] == [b, c, a]
    ok(run_canopy(home, "queue", "remove", queue, c))
    listing = ok(run_canopy(home, "queue", "list", queue[:9], "--json")).json()
    assert [m["spec_id"] for m in listing["members"]] == [b, a]
    assert listing["latest_run"] is None  # no graph ran over it
    assert ok(run_canopy(home, "spec", "set-status", a, "skip", "--json")).json()["status"] == (
        "skipped"
    )
    tagged = ok(run_canopy(home, "spec", "list", "--workdir", "/src/app", "--json")).json()
    assert [s["id"] for s in tagged] == [a]
    section = ok(run_canopy(home, "spec", "section", b, "summary")).stdout
    assert section.strip() == "beta summary"
    human = ok(run_canopy(home, "queue", "list", queue)).stdout
    assert "nightly" in human
    assert "beta" in human


def test_project_list_and_standalone_specs_read_as_the_tui_shows_them(home: Path) -> None:
    """The TUI's project picker and Backlog, from the CLI (one set of
    operations behind every front end)."""
    a = create_spec(home, "alpha", "--workdir", "/w")
    b = create_spec(home, "beta", "--workdir", "/v")
    definition = json.dumps(example(specs=[a]))  # runs in /src/app; alpha is bound to it
    ok(run_canopy(home, "graph", "create", "-f", "-", stdin=definition))
    work = str(home.parent)
    ok(run_canopy(home, "session", "new", "--platform", "claude", "--workdir", work))
    listed = ok(run_canopy(home, "project", "list", "--json")).json()
    assert listed == sorted(["/src/app", "/v", "/w", work])
    assert "/src/app" in ok(run_canopy(home, "project", "list")).stdout
    standalone = ok(run_canopy(home, "spec", "list", "--standalone", "--json")).json()
    assert [s["id"] for s in standalone] == [b]
    everything = ok(run_canopy(home, "spec", "list", "--json")).json()
    assert [s["id"] for s in everything] == [a, b]


def test_server_check_names_why_no_daemon_serves(home: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    env = {"TEMPORAL_ADDRESS": address}
    checked = ok(run_canopy(home, "server", "check", "--json", env=env)).json()
    assert checked["serving"] is False
    assert checked["problem"].startswith(f"cannot reach Temporal at {address}")
    human = ok(run_canopy(home, "server", "check", env=env)).stdout
    assert human == f"daemon down: {checked['problem']}\n"


def test_spec_update_and_delete(home: Path, tmp_path: Path) -> None:
    spec = create_spec(home, "alpha")
    new_body = tmp_path / "body.md"
    new_body.write_text(body("rewritten"))
    updated = ok(
        run_canopy(
            home,
            "spec",
            "update",
            spec,
            "--name",
            "renamed",
            "--body-file",
            str(new_body),
            "--json",
        )
    ).json()
    assert (updated["name"], updated["summary"]) == ("renamed", "rewritten")
    ok(run_canopy(home, "spec", "delete", spec))
    refused(run_canopy(home, "spec", "get", spec), "no spec matches", spec)


def test_bad_input_gets_one_clear_line_and_writes_nothing(home: Path) -> None:
    spec = create_spec(home, "alpha")
    queue = ok(run_canopy(home, "queue", "create", "q", "--json")).json()["id"]
    ok(run_canopy(home, "queue", "add", queue, spec))
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    before = snapshot(store)
    refused(
        run_canopy(home, "spec", "create", "--name", "x", "--body", "<summary>x</summary>"),
        "missing tag",
    )
    refused(
        run_canopy(
            home, "spec", "create", "--name", "x", "--body", body().replace("<goal>", "<gaol>")
        ),
        "<gaol>",
    )
    refused(run_canopy(home, "spec", "create", "--name", "x"), "needs a body")
    refused(
        run_canopy(home, "spec", "create", "--name", "x", "--body-file", "/nonexistent"),
        "cannot read body file /nonexistent",
    )
    refused(
        run_canopy(home, "spec", "update", spec, "--name", "y", "--body", "junk"),
        "text outside tags",
    )
    refused(run_canopy(home, "spec", "set-status", spec, "finish"), "unknown set_status action")
    refused(run_canopy(home, "spec", "list", "--status", "done"), "unknown spec status 'done'")
    refused(run_canopy(home, "queue", "add", queue, spec), "already in queue")
    refused(
        run_canopy(home, "queue", "reorder", queue, "spec-zzz"), "extra spec-zzz", f"missing {spec}"
    )
    refused(run_canopy(home, "queue", "group", queue, spec), "exactly one of GROUP or --clear")
    refused(run_canopy(home, "queue", "list", "queue-nope"), "no queue matches 'queue-nope'")
    assert snapshot(store) == before
    store.close()


def test_ambiguous_prefix_lists_candidates(home: Path) -> None:
    a = create_spec(home, "alpha")
    b = create_spec(home, "beta")
    line = refused(run_canopy(home, "spec", "get", "spec-"), "ambiguous")
    assert a in line
    assert b in line


def test_usage_errors_exit_2(home: Path) -> None:
    assert run_canopy(home, "spec", "bogus").code == 2
    assert run_canopy(home, "spec", "create").code == 2


def test_with_json_a_refusal_is_also_an_error_object_on_stdout(home: Path) -> None:
    """For an operation's refusal and for typer's usage errors alike."""
    create_spec(home, "alpha")
    result = run_canopy(home, "spec", "get", "zzz", "--json")
    assert refused(result) == "error: no spec matches 'zzz'"
    assert result.json() == {"error": "no spec matches 'zzz'"}
    assert run_canopy(home, "spec", "get", "zzz").stdout == ""  # without --json: stderr only
    for args, message in (
        (["spec", "create", "--json"], "Missing option '--name'."),
        (["spec", "bogus", "--json"], "No such command 'bogus'."),
        (["--bogus", "--json"], "No such option: --bogus"),
    ):
        result = run_canopy(home, *args)
        assert result.code == 2, args
        assert result.json() == {"error": message}
        assert message in result.stderr  # typer's usage error, as without --json


def test_version(home: Path) -> None:
    result = ok(run_canopy(home, "--version"))
    assert result.stdout == f"canopy {importlib.metadata.version('canopy')}\n"
    assert not COMMAND_MODULES & modules_loaded(home, "--version")


def test_shell_completion_completes_commands_and_a_lazy_commands_options(home: Path) -> None:
    def complete(words: str) -> list[str]:
        """What bash completion offers for the last of ``words``."""
        cword = str(len(words.split()) - 1)
        env = {"_CANOPY_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
        return ok(run_canopy(home, env=env)).stdout.split()

    assert complete("canopy que") == ["queue"]
    assert "set-status" in complete("canopy spec s")
    assert complete("canopy spec list --") == [
        "--workdir",
        "--status",
        "--standalone",
        "--contains",
        "--limit",
        "--json",
        "--help",
    ]
    assert "--install-completion" in ok(run_canopy(home, "--help")).stdout


def test_tables_are_not_cut_to_a_width_when_piped(home: Path) -> None:
    name = "a spec name long enough that an 80 column table would have to wrap or cut it"
    spec = create_spec(home, name, "--workdir", "/a/workdir/path/deep/enough/to/be/cut/as/well")
    result = run_canopy(home, "spec", "list", env={"COLUMNS": "40"})
    row = next(line for line in ok(result).stdout.splitlines() if spec in line)
    assert name in row and "/a/workdir/path/deep/enough/to/be/cut/as/well" in row


LOADED_SCRIPT = (
    "import os, sys; from canopy.cli.main import run; code = run(sys.argv[1:]); "
    "sys.stderr.write('\\nloaded: ' + ' '.join(sys.modules) + '\\n'); "
    "sys.stdout.flush(); sys.stderr.flush(); os._exit(code)"
)
"""Runs ``canopy ARGS`` in a fresh interpreter, then lists ``sys.modules`` on stderr and
leaves with ``os._exit``, as ``canopy``'s entry point does after talking to Temporal: the
SDK's threads can abort a finalizing interpreter, which wrote past the list.

``-X importtime`` does not report modules loaded through :mod:`importlib`, which is how
the root loads its commands."""


def loaded_from(stderr: str) -> set[str]:
    """The modules :data:`LOADED_SCRIPT` listed."""
    last = stderr.splitlines()[-1]
    assert last.startswith("loaded: "), stderr
    return set(last.split()[1:])


def modules_loaded(home: Path, *args: str) -> set[str]:
    """Every module in ``sys.modules`` once ``canopy ARGS`` has run in a fresh interpreter."""
    completed = subprocess.run(
        [sys.executable, "-c", LOADED_SCRIPT, *args],
        capture_output=True,
        text=True,
        env=canopy_env(home),
        timeout=120,
    )
    return loaded_from(completed.stderr)


COMMAND_MODULES = {module for module, _attribute, _line in COMMANDS.values()}


def test_root_help_loads_no_command_module(home: Path) -> None:
    result = ok(run_canopy(home, "--help"))
    for name in COMMANDS:
        assert f"\n  {name} " in result.stdout, name
    loaded = modules_loaded(home, "--help")
    assert not COMMAND_MODULES & loaded
    assert not {"sqlalchemy", "pydantic", "jinja2", "temporalio", "textual", "rich"} & loaded


@pytest.mark.parametrize("args", [["spec", "--help"], ["graph", "--help"], ["session", "--help"]])
def test_a_command_groups_help_loads_no_operations(home: Path, args: list[str]) -> None:
    """Building a group for its help imports its command module, not the store or SDK,
    and typer converts its options without pydantic."""
    loaded = modules_loaded(home, *args)
    unwanted = {"sqlalchemy", "pydantic", "temporalio", "jinja2", "canopy.platforms", "rich"}
    assert not unwanted & loaded


@pytest.mark.parametrize("name", ["spec", "graph", "session", "server"])
def test_help_lists_each_commands_whole_first_paragraph(home: Path, name: str) -> None:
    """The plain help renderer would cut a long line with "..."; every word is shown."""
    shown = " ".join(ok(run_canopy(home, name, "--help")).stdout.split())
    group = load_command(name)
    assert isinstance(group, TyperGroup)
    for command in group.commands.values():
        assert command.help is not None
        assert " ".join(command.help.split("\n\n")[0].split()) in shown, command.name


@pytest.mark.parametrize("name", COMMANDS)
def test_root_help_lines_are_the_commands_own_help(name: str) -> None:
    """``canopy --help`` shows the first paragraph of each command's help, as typer does."""
    help_text = load_command(name).help
    assert help_text is not None
    assert COMMANDS[name][2] == help_text.split("\n\n")[0]


def test_a_command_loads_only_its_own_module(home: Path) -> None:
    loaded = modules_loaded(home, "server", "status")
    assert COMMAND_MODULES & loaded == {"canopy.cli.server_cmds"}
    assert "textual" not in loaded  # only `canopy tui` loads the TUI


def test_graph_info_of_a_running_graph_asks_temporal(home: Path) -> None:
    """The store says running but no run is active: the consistency warning says so."""
    definition = json.dumps(example(name="stuck"))
    graph = ok(run_canopy(home, "graph", "create", "-f", "-", "--json", stdin=definition)).json()
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    with store.transaction() as rows:
        update(rows, "graphs", graph["id"], status="running")
    store.close()
    info = ok(run_canopy(home, "graph", "info", "stuck", "--json"))
    assert "has no active run" in info.json()["consistency_warning"]


def test_graph_info_reads_a_stored_graph_without_the_graph_model(home: Path) -> None:
    """Both views of a stored graph are built from the store's JSON: the graph model (with
    jinja2 and the platforms) is only for validating input. Piped, the tables are drawn
    without rich."""
    ok(run_canopy(home, "graph", "create", "-f", "-", stdin=json.dumps(example())))
    for view in (("--json",), ()):
        loaded = modules_loaded(home, "graph", "info", "build", *view)
        assert "canopy.ops.graph_info" in loaded
        unwanted = {
            "canopy.graphs.model",
            "canopy.platforms",
            "jinja2",
            "pydantic",
            "rich",
            "sqlalchemy",
        }
        assert not unwanted & loaded, view


def test_graph_delete_does_not_load_the_graph_model(home: Path) -> None:
    """Only the writes that validate a definition (create, edit) need the graph model; a
    graph without schedules is deleted without the start path or the SDK."""
    graph = ok(
        run_canopy(home, "graph", "create", "-f", "-", "--json", stdin=json.dumps(example()))
    )
    loaded = modules_loaded(home, "graph", "delete", graph.json()["id"])
    assert ok(run_canopy(home, "graph", "list", "--json")).json() == []
    unwanted = {"canopy.graphs.model", "canopy.ops.runs", "jinja2", "sqlalchemy", "temporalio"}
    assert not unwanted & loaded


def test_a_refused_steering_command_loads_no_sdk_orm_or_rich(home: Path) -> None:
    """The store refuses it before anything is sent: the store read is all it costs."""
    ok(run_canopy(home, "graph", "create", "-f", "-", stdin=json.dumps(example())))
    for args in (
        ("graph", "pause", "build"),
        ("graph", "continue", "build", "--mode", "run_from_node", "--node", "test"),
        ("graph", "reset", "build", "--json"),
    ):
        loaded = modules_loaded(home, *args)
        unwanted = {"sqlalchemy", "pydantic", "rich", "temporalio", "asyncio"}
        assert not unwanted & loaded, args


def unreachable_temporal() -> dict[str, str]:
    """An environment naming a Temporal address nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return {"TEMPORAL_ADDRESS": f"127.0.0.1:{probe.getsockname()[1]}"}


def live_gone_and_held(home: Path) -> None:
    """The sessions ``pair`` (live), ``gone`` (finished) and ``held`` (finished, with a
    message still queued for it)."""
    new_session = ("session", "new", "--platform", "claude", "--workdir", str(home.parent))
    for name in ("pair", "gone", "held"):
        ok(run_canopy(home, *new_session, "--name", name))
    ok(run_canopy(home, "session", "send", "held", "waiting", env=unreachable_temporal()))
    for name in ("gone", "held"):
        ok(run_canopy(home, "session", "close", name))


def each_answers_in_one_line(home: Path, commands: list[tuple[str, ...]]) -> None:
    """Each command in turn, with Temporal unreachable: it succeeds, or is refused (exit 1)
    or a usage error (exit 2) with one line on stderr, never a traceback."""
    env = unreachable_temporal()
    for args in commands:
        result = run_canopy(home, *args, env=env)
        assert result.code in (0, 1, 2), (args, result.stderr)
        if result.code == 1:
            assert len(result.stderr.splitlines()) == 1, (args, result.stderr)
            assert result.stderr.startswith("error: "), (args, result.stderr)


def test_session_send_refuses_in_one_line_and_keeps_what_it_accepts(home: Path) -> None:
    """Refusals, and sends that store the message but cannot reach Temporal. A message
    refused for its --wait is not stored; an accepted one is, queued, with the warning."""
    live_gone_and_held(home)
    pair = ok(run_canopy(home, "session", "get", "pair", "--json")).json()["id"]
    each_answers_in_one_line(
        home,
        [
            ("session", "send", "nobody", "hello"),
            ("session", "send", "gone", "hello", "--json"),
            ("session", "send", "pair", " \n"),
            ("session", "send", "pair", "hello", "--wait", "700000"),
            ("session", "send", "pair", "hello", "--wait=1e9"),
            ("session", "send", "pair", "hello", "--wait", "-1"),
            ("session", "send", "pair"),
            ("session", "send", "pair", "first", "--json"),
            ("session", "send", pair[:8], "second", "--wait", "0.5"),
        ],
    )
    stored = sqlite3.connect(home / "canopy.db")
    messages = stored.execute("SELECT prompt, status FROM messages ORDER BY seq").fetchall()
    stored.close()
    assert messages == [("waiting", "queued"), ("first", "queued"), ("second", "queued")]


def test_session_resume_refuses_in_one_line_and_resumes(home: Path, tmp_path: Path) -> None:
    """Refusals, a resume with nothing queued, and one whose queued message cannot be
    handed to Temporal."""
    live_gone_and_held(home)
    conversation = ("session", "resume", "--harness-conversation")
    each_answers_in_one_line(
        home,
        [
            ("session", "resume", "pair"),
            ("session", "resume", "nobody", "--json"),
            (
                "session",
                "resume",
            ),
            ("session", "resume", "gone", "--platform", "claude"),
            (*conversation, "abc"),
            (*conversation, "a/b", "--platform", "claude"),
            (*conversation, "abc", "--platform", "claude", "--workdir", str(tmp_path / "nope")),
            (*conversation, "abc", "--platform", "claude", "--workdir", str(tmp_path)),
            ("session", "resume", "gone", "--json"),
            ("session", "resume", "held"),
            ("session", "resume", "held"),
        ],
    )
    resumed = ok(run_canopy(home, "session", "list", "--json")).json()["sessions"]
    assert sorted(session["name"] for session in resumed) == ["gone", "held", "pair"]


def test_a_refused_send_or_resume_loads_no_sdk_orm_or_rich(home: Path) -> None:
    """The store refuses it before anything is sent: the store read is all it costs."""
    new_session = ("session", "new", "--platform", "claude", "--workdir", str(home.parent))
    ok(run_canopy(home, *new_session, "--name", "gone"))
    ok(run_canopy(home, "session", "close", "gone"))
    for args in (
        ("session", "send", "nobody", "hello"),
        ("session", "send", "gone", "hello", "--json"),
        ("session", "send", "gone", " ", "--wait", "5"),
        ("session", "send", "gone", "hello", "--wait", "700000"),
        ("session", "resume", "nobody"),
        ("session", "resume", "gone", "--platform", "claude", "--json"),
    ):
        loaded = modules_loaded(home, *args)
        unwanted = {"sqlalchemy", "pydantic", "rich", "temporalio", "asyncio"}
        assert not unwanted & loaded, args
    resumed = modules_loaded(home, "session", "resume", "gone")  # no message to hand over
    assert "asyncio" in resumed
    assert not {"sqlalchemy", "rich", "temporalio"} & resumed


async def signalled(handle: WorkflowHandle[Any, Any], name: str) -> bool:
    """Whether the workflow's history holds the signal ``name``, or the update of that name
    accepted (how Canopy asks while a worker serves the run)."""
    history = await handle.fetch_history()
    names = [
        event.workflow_execution_signaled_event_attributes.signal_name
        if event.HasField("workflow_execution_signaled_event_attributes")
        else event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for event in history.events
    ]
    return name in names


@pytest.mark.server
async def test_a_pause_sees_the_workflow_pause_and_loads_no_orm(
    serving: Client, home_store: Store, repo: Path, canopy_home: Path, tmp_path: Path
) -> None:
    """The command waits while the workflow pauses: what it reads from the store then must
    be what the workflow committed. It loads the SDK, and neither the ORM, typer nor rich."""
    gate = tmp_path / "gate"
    alpha, beta = make_specs(home_store, "alpha", "beta")
    waits = f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done"
    graph = make_graph(home_store, repo, [{"name": "work", "command": waits}], specs=[alpha, beta])
    started = await runs.graph_run(home_store, graph)
    await eventually(lambda: node_run_of(home_store, alpha, "running"), "alpha's node run")
    handle = serving.get_workflow_handle(started["workflow_id"])
    target = serving.service_client.config.target_host
    pause = subprocess.Popen(
        [sys.executable, "-c", LOADED_SCRIPT, "graph", "pause", "build", "--json"],
        env=canopy_env(canopy_home, TEMPORAL_ADDRESS=target),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        await eventually(lambda: signalled(handle, "pause"), "the pause in the history")
        gate.touch()  # only now can the spec end and the run pause
        stdout, stderr = await asyncio.to_thread(pause.communicate, timeout=60)
    finally:
        pause.kill()
        await handle.terminate("test over")
    result = json.loads(stdout)
    assert result == {
        "graph_id": graph,
        "name": "build",
        "status": "paused",
        "blocker": result["blocker"],
        "run_id": started["run_id"],
        "workflow_id": started["workflow_id"],
        "signal": "pause",
        "note": None,
    }
    assert result["blocker"]["kind"] == "paused"
    loaded = loaded_from(stderr)
    assert "temporalio" in loaded
    assert not {"sqlalchemy", "rich"} & loaded


@pytest.mark.server
async def test_a_send_and_a_resume_are_delivered_and_load_no_orm(
    serving: Client, home_store: Store, repo: Path, canopy_home: Path
) -> None:
    """A send stores its message over sqlite3 and commits it, wakes the daemon, and --wait
    polls the store until the delivery lands: every poll must see what the worker
    committed since. A resume hands the daemon a message queued before the close. Both
    load the SDK, and neither the ORM, typer nor rich."""
    pair = sessions.session_new(home_store, "claude", name="pair", workdir=str(repo))
    later = sessions.session_new(home_store, "claude", name="later", workdir=str(repo))
    queued = sessions.session_send(home_store, "later", "still there?")  # nobody woken
    sessions.session_close(home_store, "later")
    on_test_queue = (  # the subprocess wakes the workflow on this test's task queue
        "import sys; from canopy.temporal import client; "
        f"client.MAIN_TASK_QUEUE = {temporal_client.MAIN_TASK_QUEUE!r}; {LOADED_SCRIPT}"
    )
    target = serving.service_client.config.target_host

    async def lane(*args: str) -> tuple[Any, set[str]]:
        completed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", on_test_queue, *args, "--json"],
            env=canopy_env(canopy_home, TEMPORAL_ADDRESS=target),
            capture_output=True,
            text=True,
            timeout=120,
        )
        return json.loads(completed.stdout), loaded_from(completed.stderr)

    sent, loaded = await lane("session", "send", "pair", "hello", "--wait", "60")
    assert (sent["status"], sent["session_id"]) == ("delivered", pair["id"])
    assert sent["delivery"]["reply"] == "fake agent done"
    assert sent == sessions.message_get(home_store, sent["id"])
    assert "temporalio" in loaded
    assert not {"sqlalchemy", "rich"} & loaded
    resumed, loaded = await lane("session", "resume", "later")
    assert (resumed["id"], resumed["status"], resumed["queued_messages"]) == (
        later["id"],
        "live",
        1,
    )
    assert "warning" not in resumed
    delivered = await wait_for_delivery(home_store, queued["id"], 60)
    assert delivered["status"] == "delivered"
    assert "temporalio" in loaded
    assert not {"sqlalchemy", "rich"} & loaded


def block_with_a_paused_run(home: Path, graph_id: str) -> None:
    """Give the graph a paused run with a node run that reported usage, a blocker and
    notifications to show, as the engine would have written them."""
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    now = utcnow()
    with store.transaction() as rows:
        blocker = {"kind": "queue_failed", "message": "1 spec failed", "failed_specs": ["spec-x"]}
        update(rows, "graphs", graph_id, blocker=blocker)
        insert(
            rows,
            "runs",
            id="run-paused0001",
            graph_id=graph_id,
            number=1,
            workdir="/w",
            workflow_id="wf",
            status="paused",
            started_at=now,
        )
        for text in ("first \x1b[31m", "second"):
            notify(rows, "session_not_found", text)
        insert(
            rows,
            "node_runs",
            run_id="run-paused0001",
            spec_id="spec-x",
            node="implement",
            visit=1,
            platform="claude",
            status="succeeded",
            started_at=now,
            ended_at=now,
            input_tokens=1200,
            output_tokens=340,
            cache_read_tokens=5000,
            cost_usd=0.25,
            turns=3,
            duration_ms=4500,
            model="claude-opus",
        )
    store.close()


@pytest.mark.parametrize(
    ("error", "race"),
    [
        (sqlite3.IntegrityError("UNIQUE constraint failed: queues.name"), True),
        (sqlite3.OperationalError("database is locked"), True),
        (sqlite3.OperationalError("no such table: specs"), False),
        (psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"), True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (psycopg.OperationalError("connection failed: Connection refused"), False),
    ],
)
def test_store_errors_read_as_the_store_s(error: Exception, race: bool) -> None:
    """The store's errors come from its driver, sqlite3 or psycopg, as they are: a lost
    race must say "try again", and no store error reads as an internal error."""
    line = unexpected_error_line(error)
    assert line.startswith(STORE_RACE if race else "the store could not be used: "), line
    assert not line.startswith("internal error")


def test_store_commands_never_import_temporalio(home: Path) -> None:
    spec = create_spec(home, "alpha")
    for args in (
        ("spec", "get", spec, "--json"),
        ("spec", "list", "--status", "pending"),
        ("queue", "create", "q"),
        ("spec", "create", "--name", "x", "--body", body()),
        ("session", "new", "--platform", "claude", "--name", "s", "--workdir", str(home)),
        ("session", "list"),
        ("session", "recall"),
        ("notifications",),
        ("usage", "--since", "24h"),
    ):
        result = ok(run_canopy(home, *args, python_flags=("-X", "importtime")))
        assert "temporalio" not in imported_modules(result), args
