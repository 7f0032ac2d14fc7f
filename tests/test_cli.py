"""The CLI as users run it: subprocesses against a temporary ``CANOPY_HOME``."""

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from canopy.cli.app import COMMANDS, app, load_command
from canopy.store.engine import Store
from tests.cli_helpers import Result, canopy_env, run_canopy
from tests.conftest import body, snapshot


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


def modules_loaded(home: Path, *args: str) -> set[str]:
    """Every module in ``sys.modules`` once ``canopy ARGS`` has run in a fresh interpreter.

    ``-X importtime`` does not report modules loaded through :mod:`importlib`, which is
    how the root loads its commands.
    """
    script = (
        "import sys; from canopy.cli.main import run; run(sys.argv[1:]); "
        "sys.stderr.write('\\nloaded: ' + ' '.join(sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=canopy_env(home),
        timeout=120,
    )
    last = completed.stderr.splitlines()[-1]
    assert last.startswith("loaded: "), completed.stderr
    return set(last.split()[1:])


COMMAND_MODULES = {module for module, _attribute, _line in COMMANDS.values()}


def test_root_help_loads_no_command_module(home: Path) -> None:
    result = ok(run_canopy(home, "--help"))
    for name in COMMANDS:
        assert f"│ {name} " in result.stdout, name
    loaded = modules_loaded(home, "--help")
    assert not COMMAND_MODULES & loaded
    assert not {"sqlalchemy", "pydantic", "jinja2", "temporalio"} & loaded


@pytest.mark.parametrize("name", COMMANDS)
def test_root_help_lines_are_the_commands_own_help(name: str) -> None:
    """``canopy --help`` shows the first paragraph of each command's help, as typer does."""
    help_text = load_command(name).help
    assert help_text is not None
    assert COMMANDS[name][2] == help_text.split("\n\n")[0]


def test_a_command_loads_only_its_own_module(home: Path) -> None:
    assert COMMAND_MODULES & modules_loaded(home, "server", "status") == {"canopy.cli.server_cmds"}


def test_fast_lane_answers_exactly_like_the_full_cli(home: Path) -> None:
    a = create_spec(home, "alpha", "--workdir", "/w")
    create_spec(home, "beta")
    queue = ok(run_canopy(home, "queue", "create", "q", "--json")).json()["id"]
    ok(run_canopy(home, "queue", "add", queue, a, "--group", "g"))
    new_session = ("session", "new", "--platform", "claude", "--workdir", str(home))
    ok(run_canopy(home, *new_session, "--name", "open"))
    ok(run_canopy(home, *new_session, "--name", "closed"))
    ok(run_canopy(home, "session", "close", "closed"))
    runner = CliRunner(env=canopy_env(home))
    for args in (
        ["spec", "list", "--json"],
        ["spec", "list", "--workdir=/w", "--status", "pending", "--json"],
        ["queue", "list", "--json"],
        ["queue", "list", queue[:8], "--json"],
        ["session", "list", "--json"],
        ["session", "list", "--all", "--json"],
        ["session", "list", "--all"],
    ):
        fast = ok(run_canopy(home, *args, python_flags=("-X", "importtime")))
        assert not {"typer", "sqlalchemy", "temporalio"} & imported_modules(fast), args
        full = runner.invoke(app, args)
        assert full.exit_code == 0, full.output
        assert fast.stdout == full.stdout, args


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
    ):
        result = ok(run_canopy(home, *args, python_flags=("-X", "importtime")))
        assert "temporalio" not in imported_modules(result), args
