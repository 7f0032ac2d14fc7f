"""``canopy graph …`` as users run it: subprocesses against a temporary ``CANOPY_HOME``."""

import json
from pathlib import Path

import pytest

from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.cli_helpers import run_canopy
from tests.conftest import insert, snapshot, update
from tests.test_cli import create_spec, imported_modules, ok, refused
from tests.test_graphs import INFO_KEYS, example

TOML_DEFINITION = '''
name = "review"
workdir = "/src/app"

[[nodes]]
name = "implement"
platform = "claude"
prompt = """
Implement {{spec_name}}.
{{requirements}}
"""

[[nodes]]
name = "test"
command = "make test SPEC={{spec_id}}"
'''


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_create_from_json_and_toml_then_list_info_edit_delete(home: Path, tmp_path: Path) -> None:
    spec = create_spec(home, "alpha")
    json_file = tmp_path / "build.json"
    json_file.write_text(json.dumps(example(specs=[spec])))
    toml_file = tmp_path / "review.toml"
    toml_file.write_text(TOML_DEFINITION)
    built = ok(run_canopy(home, "graph", "create", "--file", str(json_file), "--json")).json()
    assert set(built) >= INFO_KEYS
    assert [s["id"] for s in built["specs"]] == [spec]
    human = ok(run_canopy(home, "graph", "create", "--file", str(toml_file))).stdout
    assert human.startswith("created graph-")

    listed = ok(run_canopy(home, "graph", "list", "--json")).json()
    assert [(g["name"], g["status"], g["blocker"]) for g in listed] == [
        ("build", "idle", None),
        ("review", "idle", None),
    ]
    assert "review" in ok(run_canopy(home, "graph", "list")).stdout

    info = ok(run_canopy(home, "graph", "info", "review", "--json")).json()
    assert set(info) >= INFO_KEYS
    assert info["nodes"][1] == {
        "name": "test",
        "command": "make test SPEC={{spec_id}}",
        "max_visits": 5,
    }
    page = ok(run_canopy(home, "graph", "info", "build")).stdout
    for text in ("implement", "claude (sonnet, high)", "ensemble fixers", "(spec fails)", "alpha"):
        assert text in page, text

    edited = ok(
        run_canopy(
            home,
            "graph",
            "edit",
            built["id"][:10],
            "--file",
            "-",
            "--json",
            stdin='{"allow_dirty_start": true, "specs": []}',
        )
    ).json()
    assert (edited["allow_dirty_start"], edited["specs"], edited["nodes"]) == (
        True,
        [],
        built["nodes"],
    )
    deleted = ok(run_canopy(home, "graph", "delete", "review", "--json")).json()
    assert deleted["deleted"] is True
    assert [g["name"] for g in ok(run_canopy(home, "graph", "list", "--json")).json()] == ["build"]


def test_bad_files_get_one_line_and_write_nothing(home: Path, tmp_path: Path) -> None:
    ok(run_canopy(home, "graph", "create", "-f", "-", stdin=json.dumps(example())))
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    before = snapshot(store)
    broken_toml = tmp_path / "broken.toml"
    broken_toml.write_text('name = "x"\n\n[[nodes]\nname = "a"\n')
    refused(
        run_canopy(home, "graph", "create", "--file", str(broken_toml)),
        f"graph file {broken_toml}: line 3:",
    )
    broken_json = tmp_path / "broken.json"
    broken_json.write_text('{"name": "x",\n "nodes": [}\n')
    refused(
        run_canopy(home, "graph", "create", "--file", str(broken_json)),
        f"graph file {broken_json}: line 2:",
    )
    refused(
        run_canopy(home, "graph", "create", "--file", str(tmp_path / "missing.json")),
        "cannot read graph file",
        "missing.json",
    )
    refused(
        run_canopy(home, "graph", "create", "-f", "-", stdin='{"name": "x", "nodes": []}'),
        "graph definition refused: nodes: must not be empty",
    )
    unknown = json.dumps(example(nodes=[{"name": "a", "platform": "clod", "prompt": "p"}]))
    refused(run_canopy(home, "graph", "create", "-f", "-", stdin=unknown), "unknown platform")
    refused(
        run_canopy(home, "graph", "edit", "build", "-f", "-", stdin='{"modle": "x"}'),
        "unknown field modle",
    )
    refused(run_canopy(home, "graph", "info", "nope"), "no graph matches 'nope'")
    assert snapshot(store) == before
    store.close()


def test_host_option_sets_the_graphs_host_on_create_and_edit(home: Path) -> None:
    """``--host`` overrides the file's host on create, and an edit needs no file for it."""
    definition = json.dumps(example(host="from-file"))
    created = ok(
        run_canopy(
            home, "graph", "create", "-f", "-", "--host", "build-1", "--json", stdin=definition
        )
    ).json()
    assert created["host"] == "build-1"
    assert "host: build-1" in ok(run_canopy(home, "graph", "info", "build")).stdout
    edited = ok(run_canopy(home, "graph", "edit", "build", "--host", "build-2", "--json")).json()
    assert (edited["host"], edited["nodes"]) == ("build-2", created["nodes"])
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    before = snapshot(store)
    line = refused(run_canopy(home, "graph", "edit", "build", "--host", "a/b"))
    assert line == (
        "error: graph definition refused: host: may use letters, digits, '_', '-', '.' and "
        "spaces only, starting with a letter, digit or '_' (found '/' at offset 1)"
    )
    refused(run_canopy(home, "graph", "edit", "build"), "graph edit needs at least one field")
    assert snapshot(store) == before
    store.close()


def test_graph_commands_never_import_temporalio(home: Path) -> None:
    result = ok(run_canopy(home, "graph", "list", "--json", python_flags=("-X", "importtime")))
    assert "temporalio" not in imported_modules(result)


def test_graph_info_shows_each_agent_nodes_stall_minutes(home: Path, tmp_path: Path) -> None:
    definition = {
        "name": "stalls",
        "nodes": [
            {"name": "quiet", "platform": "claude", "prompt": "p", "stall_minutes": 0},
            {"name": "watched", "platform": "claude", "prompt": "p", "stall_minutes": 15},
            {"name": "default", "platform": "claude", "prompt": "p"},
            {"name": "check", "command": "true"},
        ],
    }
    (tmp_path / "g.json").write_text(json.dumps(definition))
    ok(run_canopy(home, "graph", "create", "-f", str(tmp_path / "g.json")))
    page = ok(run_canopy(home, "graph", "info", "stalls")).stdout
    stall = {
        line.split("│")[2].strip(): line.split("│")[-2].strip()
        for line in page.splitlines()
        if line.startswith("│") and line.split("│")[1].strip().isdigit()
    }
    assert stall == {"quiet": "off", "watched": "15", "default": "", "check": ""}


def test_graph_info_shows_stored_parts_exactly_as_stored(home: Path) -> None:
    """The blocker keeps what the engine wrote (a field no kind names, a ``null``), and the
    tables read each stored node's kind and each fired hook's mode from its JSON."""
    ok(run_canopy(home, "graph", "create", "-f", "-", stdin=json.dumps(example())))
    blocker = {"kind": "stopped", "message": "stopped at fix", "node": None, "extra": {"k": 1}}
    hooks = [
        {"command": "notify-send done"},
        {"platform": "codex", "prompt": "Summarise."},
        {"prompt": "Look.", "target_session_name": "watcher"},
    ]
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    with store.transaction() as rows:
        (graph,) = rows("SELECT id FROM graphs", {})
        update(rows, "graphs", graph["id"], blocker=blocker)
        for index, hook in enumerate(hooks):
            insert(
                rows,
                "hook_runs",
                graph_id=graph["id"],
                event="on_completed",
                hook_index=index,
                hook_config=hook,
                status="succeeded",
                fire_key=f"fired-{index}",
                started_at=utcnow(),
            )
    store.close()
    info = ok(run_canopy(home, "graph", "info", "build", "--json")).json()
    assert info["blocker"] == blocker
    assert [run["hook_config"] for run in info["completion_hook_runs"]] == hooks
    page = ok(run_canopy(home, "graph", "info", "build")).stdout
    assert "blocker: stopped at fix" in page
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in page.splitlines()]
    nodes = {row[1]: (row[2], row[4]) for row in cells if row and row[0].isdigit()}
    assert nodes == {
        "implement": ("claude (sonnet, high)", "test"),
        "test": ("command", "(spec completes)"),
        "fix": ("ensemble fixers", "test"),
    }
    fired = [row[2] for row in cells if row and row[0] == "on_completed"]
    assert fired == ["command", "agent (codex)", "interactive"]
