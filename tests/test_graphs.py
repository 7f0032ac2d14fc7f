"""Graph definitions and their operations, on every store backend."""

import copy
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from canopy.errors import Refused
from canopy.graphs.model import validate_definition
from canopy.graphs.nodemodels import AgentNode
from canopy.graphs.parse import parse_definition
from canopy.ops import graphs, queues, specs
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.conftest import body, insert, snapshot, update

pytestmark = pytest.mark.store

Mutation = Callable[[dict[str, Any]], None]

INFO_KEYS = {
    "id",
    "name",
    "status",
    "workdir",
    "host",
    "allow_dirty_start",
    "blocker",
    "hooks",
    "nodes",
    "ensembles",
    "specs",
    "active_run",
    "runs",
    "node_runs",
    "completion_hook_runs",
    "queue_progress",
    "scheduled_resume_at",
    "consistency_warning",
}


def example(**changes: Any) -> dict[str, Any]:
    """The example graph of docs/graphs.md (without bound specs), with top-level fields replaced."""
    definition: dict[str, Any] = {
        "name": "build",
        "workdir": "/src/app",
        "allow_dirty_start": False,
        "nodes": [
            {
                "name": "implement",
                "platform": "claude",
                "model": "sonnet",
                "effort": "high",
                "prompt": "Implement this spec.\n{{spec_body}}",
                "timeout_minutes": 90,
            },
            {"name": "test", "command": "make test", "on_failure": "fix"},
            {
                "name": "fix",
                "ensemble": "fixers",
                "prompt": "Tests fail. Fix them.",
                "next": "test",
                "max_visits": 3,
            },
        ],
        "ensembles": {"fixers": [{"platform": "claude"}, {"platform": "codex", "model": "gpt-5"}]},
    }
    definition.update(changes)
    return definition


def node(index: int, **fields: Any) -> Mutation:
    """A mutation setting fields on node ``index`` (``None`` removes the field)."""

    def mutate(definition: dict[str, Any]) -> None:
        for key, value in fields.items():
            if value is None:
                definition["nodes"][index].pop(key, None)
            else:
                definition["nodes"][index][key] = value

    return mutate


def top(**fields: Any) -> Mutation:
    """A mutation setting top-level fields (``None`` removes the field)."""

    def mutate(definition: dict[str, Any]) -> None:
        for key, value in fields.items():
            if value is None:
                definition.pop(key, None)
            else:
                definition[key] = value

    return mutate


def insert_run(
    store: Store, graph_id: str, number: int, status: str, queue_id: str | None = None
) -> str:
    run_id = f"run-test{number:06d}"
    with store.transaction() as rows:
        insert(
            rows,
            "runs",
            id=run_id,
            graph_id=graph_id,
            number=number,
            queue_id=queue_id,
            workdir="/w",
            workflow_id=f"graph-run-{number}",
            status=status,
            started_at=utcnow() + timedelta(minutes=number),
        )
    return run_id


def insert_node_runs(store: Store, run_id: str, launches: list[tuple[str, str, str]]) -> None:
    """Node runs in launch order: (spec id, node, status)."""
    with store.transaction() as rows:
        for spec_id, node_name, status in launches:
            insert(
                rows,
                "node_runs",
                run_id=run_id,
                spec_id=spec_id,
                node=node_name,
                visit=1,
                platform="claude" if node_name != "test" else None,
                status=status,
                exit_code=0 if status == "succeeded" else 1,
                log_path=f"/logs/{spec_id}-{node_name}.log",
                harness_session_id="sess-1" if node_name != "test" else None,
                started_at=utcnow(),
            )


def insert_run_specs(
    store: Store, run_id: str, passages: list[tuple[str, str | None, str | None]]
) -> None:
    """Spec passages in order: (spec id, group, outcome; ``None`` while in progress)."""
    with store.transaction() as rows:
        for spec_id, group, outcome in passages:
            insert(
                rows,
                "run_specs",
                run_id=run_id,
                spec_id=spec_id,
                group_name=group,
                outcome=outcome,
                started_at=utcnow(),
            )


# --------------------------------------------------------------------------- create / get


def test_create_stores_the_definition_with_defaults_and_returns_the_info_shape(
    store: Store,
) -> None:
    a = specs.spec_create(store, "a", body())
    b = specs.spec_create(store, "b", body())
    created = graphs.graph_create(store, example(specs=[b["id"], a["id"][:-3]]))
    assert set(created) >= INFO_KEYS
    assert created["id"].startswith("graph-")
    assert (created["status"], created["blocker"], created["hooks"]) == ("idle", None, {})
    assert [n["name"] for n in created["nodes"]] == ["implement", "test", "fix"]
    assert created["nodes"][1] == {
        "name": "test",
        "command": "make test",
        "on_failure": "fix",
        "max_visits": 5,
    }
    assert created["nodes"][0]["timeout_minutes"] == 90
    assert created["ensembles"]["fixers"][1] == {"platform": "codex", "model": "gpt-5"}
    assert [s["id"] for s in created["specs"]] == [b["id"], a["id"]]
    assert created["specs"][0] == {"id": b["id"], "name": "b", "status": "pending"}
    assert (created["runs"], created["node_runs"], created["completion_hook_runs"]) == ([], [], [])
    assert created["active_run"] is None
    assert created["queue_progress"] is None
    assert created["scheduled_resume_at"] is None
    assert created["consistency_warning"] is None
    assert graphs.graph_get(store, created["id"]) == created
    assert specs.spec_get(store, a["id"])["graphs"] == [created["id"]]


def test_workdir_is_stored_absolute_and_is_optional(store: Store) -> None:
    relative = graphs.graph_create(store, example(workdir="some/dir/"))
    assert relative["workdir"] == os.path.abspath("some/dir")
    without = example()
    del without["workdir"]
    assert graphs.graph_create(store, without)["workdir"] is None


def test_a_graph_names_the_host_that_holds_its_workdir(store: Store) -> None:
    """Stored stripped, shown by graph info, kept by edits of other fields, and cleared by
    ``null``; a graph that names none has ``host`` null."""
    created = graphs.graph_create(store, example(host=" build-1 "))
    assert created["host"] == "build-1"
    assert graphs.graph_get(store, created["id"])["host"] == "build-1"
    assert graphs.graph_edit(store, "build", {"allow_dirty_start": True})["host"] == "build-1"
    moved = graphs.graph_edit(store, "build", {"host": "build-2"})
    assert (moved["host"], moved["nodes"]) == ("build-2", created["nodes"])
    assert graphs.graph_edit(store, "build", {"host": None})["host"] is None
    assert graphs.graph_create(store, example(name="anywhere"))["host"] is None


def test_graphs_resolve_by_exact_name_or_unique_id_prefix(store: Store) -> None:
    created = graphs.graph_create(store, example())
    assert graphs.graph_get(store, "build")["id"] == created["id"]
    assert graphs.graph_get(store, created["id"][:-3])["id"] == created["id"]
    twin = graphs.graph_create(store, example())
    with pytest.raises(Refused, match="graph name 'build' is ambiguous") as refusal:
        graphs.graph_get(store, "build")
    assert created["id"] in str(refusal.value)
    assert twin["id"] in str(refusal.value)
    with pytest.raises(Refused, match="no graph matches 'graph-nope'"):
        graphs.graph_get(store, "graph-nope")


# --------------------------------------------------------------------------- refusals

REFUSALS: list[tuple[str, Mutation, str]] = [
    ("unknown field", node(0, modle="x"), "unknown field nodes[0].modle (node implement)"),
    ("unknown top field", top(on_complete={}), "unknown field on_complete"),
    ("unknown next", node(2, next="tset"), "node fix: next names unknown node 'tset'"),
    (
        "unknown on_failure",
        node(1, on_failure="fxi"),
        "node test: on_failure names unknown node 'fxi'; nodes: implement, test, fix",
    ),
    ("neither kind", node(1, command=None), "nodes[1] (node test): needs platform or ensemble"),
    (
        "agent and command",
        node(1, platform="claude"),
        "a node is an agent (platform or ensemble) or a command, not both",
    ),
    ("platform and ensemble", node(2, platform="claude"), "give platform or ensemble, not both"),
    (
        "unknown platform",
        node(0, platform="clod"),
        "nodes[0].platform (node implement): unknown platform 'clod'; known platforms: claude",
    ),
    (
        "unknown member platform",
        lambda d: d["ensembles"]["fixers"].append({"platform": "nope"}),
        "ensembles.fixers[2].platform: unknown platform 'nope'",
    ),
    ("unknown ensemble", node(2, ensemble="fixrs"), "node fix: unknown ensemble 'fixrs'"),
    ("empty ensemble", top(ensembles={"fixers": []}), "ensembles.fixers: must not be empty"),
    (
        "unknown prompt marker",
        node(0, prompt="Do {{spec}}"),
        "nodes[0] (node implement): unknown marker {{spec}} in prompt; supported: graph_name",
    ),
    (
        "unknown command marker",
        node(1, command="make {{target}}"),
        "nodes[1] (node test): unknown marker {{target}} in command; supported:",
    ),
    (
        "marker expression",
        node(1, command="echo {{ spec_name|upper }}"),
        "unsupported marker {{ spec_name|upper }} in command",
    ),
    ("duplicate node", node(2, name="test"), "duplicate node name 'test'"),
    ("empty nodes", top(nodes=[]), "nodes: must not be empty"),
    ("missing nodes", top(nodes=None), "nodes is required"),
    ("missing prompt", node(0, prompt=None), "an agent node needs a prompt"),
    ("prompt on command", node(1, prompt="x"), "a command node takes no prompt"),
    ("model on command", node(1, model="x"), "model and effort apply to platform nodes only"),
    ("unknown hook event", top(hooks={"on_done": []}), "hooks: unknown event 'on_done'; events:"),
    (
        "max_visits",
        node(2, max_visits=0),
        "nodes[2].max_visits (node fix): 0 is out of range; it must be between 1 and 1000",
    ),
    ("max_visits type", node(2, max_visits="3"), "nodes[2].max_visits (node fix): Input should be"),
    (
        "timeout",
        node(0, timeout_minutes=0),
        "nodes[0].timeout_minutes (node implement): 0 is out of range; it must be between 1 "
        "and 10080 minutes (7 days)",
    ),
    ("missing name", top(name=None), "name is required"),
    ("multi-line name", top(name="a\nb"), "name: must be a single line"),
    ("blank node name", node(0, name=" "), "nodes[0].name: must not be empty"),
    (
        "bad flag",
        top(allow_dirty_start="yes"),
        "allow_dirty_start: Input should be a valid boolean",
    ),
    (
        "unsafe host",
        top(host="../etc"),
        "host: may use letters, digits, '_', '-', '.' and spaces only, starting with a "
        "letter, digit or '_' (found '.' at offset 0)",
    ),
    ("multi-line host", top(host="a\nb"), "host: must be a single line"),
    ("long host", top(host="h" * 256), "host: must be at most 255 characters (this one has 256)"),
]


@pytest.mark.parametrize(
    ("mutate", "message"), [(m, msg) for _, m, msg in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_a_bad_definition_is_refused_in_one_line_and_nothing_is_written(
    store: Store, mutate: Mutation, message: str
) -> None:
    existing = graphs.graph_create(store, example(name="keep"))
    before = snapshot(store)
    definition = copy.deepcopy(example())
    mutate(definition)
    with pytest.raises(Refused) as refusal:
        graphs.graph_create(store, definition)
    text = str(refusal.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith("graph definition refused: ")
    if "is required" not in message:  # an edit keeps the fields it does not name
        with pytest.raises(Refused, match=re.escape(message)):
            graphs.graph_edit(store, existing["id"], definition)
    assert snapshot(store) == before


def test_several_problems_report_the_first_and_a_count(store: Store) -> None:
    definition = example(name=3, allow_dirty_start="no")
    with pytest.raises(Refused, match=r"name: Input should be .* \(and 1 more problem\)$"):
        graphs.graph_create(store, definition)


def test_bound_spec_references_are_resolved_and_checked(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    other = graphs.graph_create(store, example(name="other", specs=[a["id"]]))
    b = specs.spec_create(store, "b", body())
    before = snapshot(store)
    with pytest.raises(Refused, match="no spec matches 'spec-nope'"):
        graphs.graph_create(store, example(specs=["spec-nope"]))
    with pytest.raises(Refused, match=f"spec {b['id']} is listed twice in specs"):
        graphs.graph_create(store, example(specs=[b["id"], b["id"][:-2]]))
    with pytest.raises(Refused, match="ambiguous spec id 'spec-'"):
        graphs.graph_create(store, example(specs=["spec-"]))
    with pytest.raises(Refused) as refusal:
        graphs.graph_create(store, example(specs=[b["id"], a["id"]]))
    assert str(refusal.value) == (
        f"spec {a['id']} is already bound to graph {other['id']} (other); "
        "a spec belongs to one graph at most"
    )
    assert snapshot(store) == before


# --------------------------------------------------------------------------- edit


def test_edit_replaces_named_fields_and_keeps_the_rest(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    b = specs.spec_create(store, "b", body())
    created = graphs.graph_create(store, example(specs=[a["id"]]))
    edited = graphs.graph_edit(
        store, created["id"], {"allow_dirty_start": True, "specs": [b["id"], a["id"]]}
    )
    assert edited["allow_dirty_start"] is True
    assert [s["id"] for s in edited["specs"]] == [b["id"], a["id"]]
    for kept in ("name", "workdir", "nodes", "ensembles", "hooks", "created_at"):
        assert edited[kept] == created[kept], kept
    renamed = graphs.graph_edit(store, "build", {"name": "  shipped ", "workdir": None})
    assert (renamed["name"], renamed["workdir"]) == ("shipped", None)
    assert [s["id"] for s in renamed["specs"]] == [b["id"], a["id"]]
    unbound = graphs.graph_edit(store, "shipped", {"specs": [b["id"]]})
    assert [s["id"] for s in unbound["specs"]] == [b["id"]]
    assert specs.spec_get(store, a["id"])["graphs"] == []


def test_edit_revalidates_the_whole_merged_definition(store: Store) -> None:
    created = graphs.graph_create(store, example())
    before = snapshot(store)
    with pytest.raises(Refused, match="node fix: unknown ensemble 'fixers'; ensembles: "):
        graphs.graph_edit(store, created["id"], {"ensembles": {}})
    with pytest.raises(Refused, match="unknown field nodez"):
        graphs.graph_edit(store, created["id"], {"nodez": []})
    with pytest.raises(Refused, match="graph edit needs at least one field to change"):
        graphs.graph_edit(store, created["id"], {})
    with pytest.raises(Refused, match=re.escape("unknown field hooks.on_failed[0].comand")):
        graphs.graph_edit(store, created["id"], {"hooks": {"on_failed": [{"comand": "x"}]}})
    assert snapshot(store) == before
    assert graphs.graph_edit(store, created["id"], {"hooks": {}})["hooks"] == {}


def test_edit_is_allowed_during_a_run(store: Store) -> None:
    created = graphs.graph_create(store, example())
    insert_run(store, created["id"], 1, "running")
    nodes = example()["nodes"][:1]
    edited = graphs.graph_edit(store, created["id"], {"nodes": nodes, "ensembles": {}})
    assert [n["name"] for n in edited["nodes"]] == ["implement"]
    assert edited["active_run"]["id"] == "run-test000001"


# --------------------------------------------------------------------------- list / delete


def test_list_shows_status_blocker_counts_and_active_run(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    first = graphs.graph_create(store, example(specs=[a["id"]]))
    second = graphs.graph_create(store, example(name="second"))
    run_id = insert_run(store, second["id"], 1, "paused")
    listed = graphs.graph_list(store)
    assert [(g["id"], g["nodes"], g["specs"], g["active_run"]) for g in listed] == [
        (first["id"], 3, 1, None),
        (second["id"], 3, 0, run_id),
    ]
    assert listed[0]["status"] == "idle"
    assert listed[0]["blocker"] is None
    assert listed[1]["scheduled_resume_at"] is None
    resume_at = datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC)
    with store.transaction() as rows:
        update(rows, "runs", run_id, scheduled_resume_at=resume_at)
    waiting = graphs.graph_list(store)[1]
    assert waiting["scheduled_resume_at"] == "2031-05-04T03:02:01.000000Z"


def test_delete_releases_bound_specs_and_drops_the_run_record(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    created = graphs.graph_create(store, example(specs=[a["id"]]))
    run_id = insert_run(store, created["id"], 1, "completed")
    insert_node_runs(store, run_id, [(a["id"], "implement", "succeeded")])
    assert graphs.graph_delete(store, "build") == {
        "id": created["id"],
        "deleted": True,
        "released_specs": [a["id"]],
    }
    assert graphs.graph_list(store) == []
    assert specs.spec_get(store, a["id"])["graphs"] == []
    assert specs.spec_set_status(store, a["id"], "complete")["status"] == "completed"
    with store.transaction() as rows:
        assert rows("SELECT COUNT(*) AS n FROM node_runs", {}) == [{"n": 0}]


@pytest.mark.parametrize("status", ["running", "paused"])
def test_delete_is_refused_while_a_run_is_active(store: Store, status: str) -> None:
    created = graphs.graph_create(store, example())
    insert_run(store, created["id"], 1, status)
    before = snapshot(store)
    with pytest.raises(Refused) as refusal:
        graphs.graph_delete(store, created["id"])
    assert str(refusal.value) == (
        f"graph {created['id']} has an active run run-test000001 ({status}); "
        "stop or reset it before deleting the graph"
    )
    assert snapshot(store) == before


# --------------------------------------------------------------------------- run record


def test_info_lists_runs_newest_first_and_the_latest_runs_node_runs(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    created = graphs.graph_create(store, example(specs=[a["id"]]))
    old = insert_run(store, created["id"], 1, "failed")
    insert_node_runs(store, old, [(a["id"], "implement", "failed")])
    latest = insert_run(store, created["id"], 2, "running")
    insert_node_runs(
        store,
        latest,
        [
            (a["id"], "implement", "succeeded"),
            (a["id"], "test", "failed"),
            (a["id"], "fix", "succeeded"),
        ],
    )
    info = graphs.graph_get(store, created["id"])
    assert [r["id"] for r in info["runs"]] == [latest, old]
    assert info["active_run"] == info["runs"][0]
    assert [(n["node"], n["status"]) for n in info["node_runs"]] == [
        ("implement", "succeeded"),
        ("test", "failed"),
        ("fix", "succeeded"),
    ]
    first = info["node_runs"][0]
    assert (first["spec_id"], first["spec_name"], first["visit"]) == (a["id"], "a", 1)
    assert (first["platform"], first["exit_code"]) == ("claude", 0)
    assert first["log_path"] == f"/logs/{a['id']}-implement.log"
    assert first["harness_session_id"] == "sess-1"
    assert first["started_at"].endswith("Z")
    assert info["queue_progress"] is None


def test_queue_progress_is_rebuilt_from_the_latest_queue_runs_history(store: Store) -> None:
    a, b, c = (specs.spec_create(store, name, body()) for name in "abc")
    queue = queues.queue_create(store, "nightly")
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue["id"], spec["id"], group="auth")
    created = graphs.graph_create(store, example())
    older = insert_run(store, created["id"], 1, "completed", queue_id=queue["id"])
    insert_run_specs(store, older, [(c["id"], None, "completed")])
    run_id = insert_run(store, created["id"], 2, "running", queue_id=queue["id"])
    insert_run_specs(
        store,
        run_id,
        [(a["id"], "auth", "limit_blocked"), (b["id"], "auth", "failed"), (a["id"], "auth", None)],
    )
    insert_node_runs(
        store,
        run_id,
        [
            (a["id"], "implement", "limit_blocked"),
            (b["id"], "implement", "succeeded"),
            (b["id"], "test", "failed"),
            (a["id"], "implement", "succeeded"),
        ],
    )
    insert_run(store, created["id"], 3, "completed")  # a bound-spec run: not queue-driven
    progress = graphs.graph_get(store, created["id"])["queue_progress"]
    assert {k: progress[k] for k in ("run_id", "run_number", "queue_id", "queue_name")} == {
        "run_id": run_id,
        "run_number": 2,
        "queue_id": queue["id"],
        "queue_name": "nightly",
    }
    assert progress["members"] == [
        {
            "spec_id": a["id"],
            "name": "a",
            "group": "auth",
            "outcome": None,
            "nodes": ["implement", "implement"],
        },
        {
            "spec_id": b["id"],
            "name": "b",
            "group": "auth",
            "outcome": "failed",
            "nodes": ["implement", "test"],
        },
    ]


# --------------------------------------------------------------------------- reading files


def fenced_block(markdown: str, language: str) -> str:
    """The first fenced code block of ``language`` in ``markdown``."""
    found = re.search(rf"```{language}\n(.*?)```", markdown, re.S)
    assert found is not None, language
    return found[1]


def test_the_documented_json_and_toml_examples_are_the_same_valid_graph() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "graphs.md").read_text()
    as_json = parse_definition(fenced_block(doc, "json"), "ship.json")
    as_toml = parse_definition(fenced_block(doc, "toml"), "ship.toml")
    assert as_json == as_toml
    del as_json["specs"]
    first = validate_definition(as_json).nodes[0]
    assert isinstance(first, AgentNode)
    assert first.prompt == "Implement this spec.\n{{spec_body}}"


@pytest.mark.parametrize(
    ("text", "filename", "message"),
    [
        ('{"name": "x",\n"name": "y"}', "g.json", "graph file g.json: duplicate key 'name'"),
        ("[1, 2]", "g.json", "graph file g.json: the definition must be an object"),
        ('name = "x"\nname = "y"', "-", "graph definition on stdin: Cannot overwrite a value"),
        ('{"name": "x"}', "g.toml", "graph file g.toml: line 1: Invalid statement"),
        ('name = "x"', "g.json", "graph file g.json: line 1: Expecting value"),
    ],
)
def test_file_syntax_errors_are_one_line_with_the_line(
    text: str, filename: str, message: str
) -> None:
    with pytest.raises(Refused) as refusal:
        parse_definition(text, filename)
    assert str(refusal.value).startswith(message)


def test_without_an_extension_the_format_is_sniffed() -> None:
    assert parse_definition(' {"name": "x"}', "-") == {"name": "x"}
    assert parse_definition('name = "x"', "graph.def") == {"name": "x"}


def with_effort(where: str, effort: str) -> dict[str, Any]:
    """A graph whose one Claude agent (a node's, an ensemble member's or a hook's) has
    ``effort``."""
    agent = {"platform": "claude", "effort": effort}
    nodes: list[dict[str, Any]] = [{"name": "a", "command": "true"}]
    definition: dict[str, Any] = {"name": "g", "nodes": nodes}
    if where == "node":
        nodes[0] = {"name": "a", "prompt": "p", **agent}
    elif where == "member":
        nodes[0] = {"name": "a", "ensemble": "e", "prompt": "p"}
        definition["ensembles"] = {"e": [agent]}
    else:
        definition["hooks"] = {"on_failed": [{"prompt": "p", **agent}]}
    return definition


@pytest.mark.parametrize("where", ["node", "member", "hook"])
def test_an_effort_the_cli_does_not_take_is_refused(where: str) -> None:
    """Claude Code only warns of an unknown effort, in a log nobody reads overnight; its
    values are checked when the graph is written (in any case, as the CLI takes them)."""
    with pytest.raises(Refused, match=r"effort 'extreme' is not one claude takes \(low, medium"):
        validate_definition(with_effort(where, "extreme"))
    validate_definition(with_effort(where, "XHigh"))
