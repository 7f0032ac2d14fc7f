"""The standalone spec backlog (reference: "Standalone spec backlog"), on every backend."""

import os

import pytest

from canopy.errors import Refused
from canopy.ops import projects, queues, specs
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.conftest import body, insert, snapshot

pytestmark = pytest.mark.store

LEGACY_BODY = "# Summary\nOld style\n\n## Goal\nStill readable\n"


def insert_legacy_spec(store: Store) -> str:
    """A heading-format spec as an older Canopy stored it (writes refuse this format)."""
    now = utcnow()
    with store.transaction() as rows:
        insert(
            rows,
            "specs",
            id="spec-legacy0001",
            name="old",
            body=LEGACY_BODY,
            status="pending",
            created_at=now,
            updated_at=now,
        )
    return "spec-legacy0001"


def bind_to_graph(store: Store, spec_id: str) -> str:
    now = utcnow()
    with store.transaction() as rows:
        insert(
            rows,
            "graphs",
            id="graph-bound00001",
            name="g",
            nodes=[],
            ensembles={},
            hooks={},
            status="idle",
            allow_dirty_start=False,
            created_at=now,
            updated_at=now,
        )
        insert(rows, "graph_specs", graph_id="graph-bound00001", spec_id=spec_id, position=0)
    return "graph-bound00001"


def test_create_then_get_returns_the_full_description(store: Store) -> None:
    created = specs.spec_create(store, "Login", body("Add login"), workdir="/src/app")
    got = specs.spec_get(store, created["id"])
    assert got["id"].startswith("spec-")
    assert got["name"] == "Login"
    assert got["status"] == "pending"
    assert got["workdir"] == "/src/app"
    assert got["body"] == body("Add login")
    assert got["sections"]["summary"] == "Add login"
    assert got["summary"] == "Add login"
    assert got["needs_conversion"] is False


def test_list_filters_by_workdir_and_status(store: Store) -> None:
    a = specs.spec_create(store, "a", body(), workdir="/w/one")
    b = specs.spec_create(store, "b", body(), workdir="/w/two")
    c = specs.spec_create(store, "c", body(), workdir="/w/one")
    specs.spec_set_status(store, c["id"], "complete")
    assert [s["id"] for s in specs.spec_list(store)] == [a["id"], b["id"], c["id"]]
    assert [s["id"] for s in specs.spec_list(store, workdir="/w/one")] == [a["id"], c["id"]]
    assert [s["id"] for s in specs.spec_list(store, status="completed")] == [c["id"]]
    assert [s["id"] for s in specs.spec_list(store, workdir="/w/one", status="pending")] == [
        a["id"]
    ]


def test_list_keeps_only_standalone_specs_when_asked(store: Store) -> None:
    a = specs.spec_create(store, "a", body(), workdir="/w/one")
    b = specs.spec_create(store, "b", body(), workdir="/w/one")
    bind_to_graph(store, b["id"])
    listed = specs.spec_list(store, workdir="/w/one", standalone=True)
    assert [s["id"] for s in listed] == [a["id"]]
    assert len(specs.spec_list(store, workdir="/w/one")) == 2


def test_a_listing_reads_only_what_is_shown_and_counts_the_rest(store: Store) -> None:
    """The TUI's Backlog reads its first rows and a count (first paint with
    10,000 specs), filtered by name as ``/`` filters the other lists."""
    names = ["Login page", "logout BUTTON", "50% off", "snake_case", "Changelog"]
    ids = [specs.spec_create(store, name, body(), workdir="/w")["id"] for name in names]
    bind_to_graph(store, ids[4])
    assert [s["id"] for s in specs.spec_list(store, standalone=True, limit=2)] == ids[:2]
    assert specs.spec_count(store, standalone=True) == {"count": 4}
    assert specs.spec_count(store, workdir="/w", status="pending") == {"count": 5}
    assert [s["name"] for s in specs.spec_list(store, contains="LOG")] == [
        "Login page",
        "logout BUTTON",
        "Changelog",
    ]
    assert specs.spec_count(store, standalone=True, contains="log") == {"count": 2}
    assert [s["id"] for s in specs.spec_list(store, contains="%")] == [ids[2]]  # literally
    assert [s["id"] for s in specs.spec_list(store, contains="e_c")] == [ids[3]]
    assert specs.spec_count(store, contains="e%c") == {"count": 0}
    for wrong in (0, 10**10):
        with pytest.raises(Refused, match=r"^limit: "):
            specs.spec_list(store, limit=wrong)


def test_projects_are_the_distinct_workdirs_and_a_path_lies_in_the_deepest(store: Store) -> None:
    specs.spec_create(store, "a", body(), workdir="/w/one")
    specs.spec_create(store, "b", body(), workdir="/w/one")
    specs.spec_create(store, "c", body(), workdir="/w/one/sub")
    specs.spec_create(store, "d", body())
    bind_to_graph(store, specs.spec_create(store, "e", body())["id"])
    assert projects.project_list(store) == ["/w/one", "/w/one/sub"]
    known = projects.project_list(store)
    assert projects.project_of(known, "/w/one/sub/deeper") == "/w/one/sub"
    assert projects.project_of(known, "/w/one/other") == "/w/one"
    assert projects.project_of(known, "/w/one") == "/w/one"
    assert projects.project_of(known, "/w/oneother") is None


def test_workdir_tags_are_absolute(store: Store) -> None:
    created = specs.spec_create(store, "a", body(), workdir="relative/dir")
    assert created["workdir"] == os.path.abspath("relative/dir")
    assert [s["id"] for s in specs.spec_list(store, workdir="relative/dir/")] == [created["id"]]


def test_list_refuses_an_unknown_status(store: Store) -> None:
    with pytest.raises(Refused, match="unknown spec status 'done'"):
        specs.spec_list(store, status="done")


def test_update_replaces_only_named_fields(store: Store) -> None:
    created = specs.spec_create(store, "a", body("one"), workdir="/w")
    renamed = specs.spec_update(store, created["id"], name="b")
    assert (renamed["name"], renamed["body"], renamed["workdir"]) == ("b", body("one"), "/w")
    rebodied = specs.spec_update(store, created["id"], body=body("two"))
    assert (rebodied["name"], rebodied["summary"]) == ("b", "two")
    cleared = specs.spec_update(store, created["id"], clear_workdir=True)
    assert cleared["workdir"] is None
    retagged = specs.spec_update(store, created["id"], workdir="/x")
    assert retagged["workdir"] == "/x"


@pytest.mark.parametrize(
    ("bad_body", "tag"),
    [
        (body().replace("<goal>", "<gaol>").replace("</goal>", "</gaol>"), "<gaol>"),
        (body().replace("<goal>\nThe goal of it.\n</goal>", ""), "missing tag <goal>"),
        (body() + "<goal>again</goal>", "<goal>"),
        (body().replace("</verification>", ""), "<verification>"),
        ("stray words\n" + body(), "text outside tags"),
    ],
)
def test_a_body_that_does_not_parse_is_refused_naming_the_tag_and_nothing_is_written(
    store: Store, bad_body: str, tag: str
) -> None:
    existing = specs.spec_create(store, "keep", body("kept"))
    before = snapshot(store)
    with pytest.raises(Refused, match=tag):
        specs.spec_create(store, "x", bad_body)
    with pytest.raises(Refused, match=tag):
        specs.spec_update(store, existing["id"], body=bad_body, name="renamed")
    assert snapshot(store) == before


def test_legacy_heading_bodies_read_fine_and_need_conversion(store: Store) -> None:
    spec_id = insert_legacy_spec(store)
    got = specs.spec_get(store, spec_id)
    assert got["needs_conversion"] is True
    assert got["sections"]["goal"] == "Still readable"
    assert specs.spec_section(store, spec_id, "summary")["markdown"] == "Old style"


def test_legacy_heading_bodies_cannot_be_written_anew(store: Store) -> None:
    with pytest.raises(Refused, match="heading format"):
        specs.spec_create(store, "x", LEGACY_BODY)


def test_section_extracts_one_canonical_section(store: Store) -> None:
    created = specs.spec_create(store, "a", body(requirements="- one\n- `<b>` two"))
    assert specs.spec_section(store, created["id"], "requirements")["markdown"] == (
        "- one\n- `<b>` two"
    )
    with pytest.raises(Refused, match="unknown section"):
        specs.spec_section(store, created["id"], "notes")


def test_delete_removes_an_unbound_spec_from_its_queues(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    b = specs.spec_create(store, "b", body())
    queue = queues.queue_create(store, "q")
    queues.queue_add_spec(store, queue["id"], a["id"])
    queues.queue_add_spec(store, queue["id"], b["id"])
    result = specs.spec_delete(store, a["id"])
    assert result == {"id": a["id"], "deleted": True, "removed_from_queues": [queue["id"]]}
    listing = queues.queue_list(store, queue["id"])
    assert [(m["position"], m["spec_id"]) for m in listing["members"]] == [(1, b["id"])]
    with pytest.raises(Refused, match="no spec matches"):
        specs.spec_get(store, a["id"])


def test_delete_refuses_a_bound_spec(store: Store) -> None:
    spec = specs.spec_create(store, "a", body())
    graph_id = bind_to_graph(store, spec["id"])
    before = snapshot(store)
    with pytest.raises(Refused, match=f"bound to graph {graph_id}"):
        specs.spec_delete(store, spec["id"])
    assert snapshot(store) == before


def test_delete_refuses_a_spec_an_active_run_is_draining(store: Store) -> None:
    spec = specs.spec_create(store, "a", body())
    queue = queues.queue_create(store, "q")
    queues.queue_add_spec(store, queue["id"], spec["id"])
    other = specs.spec_create(store, "b", body())
    graph_id = bind_to_graph(store, other["id"])
    with store.transaction() as rows:
        insert(
            rows,
            "runs",
            id="run-active00001",
            graph_id=graph_id,
            number=1,
            queue_id=queue["id"],
            workdir="/w",
            workflow_id="wf",
            status="running",
            started_at=utcnow(),
        )
    with pytest.raises(Refused, match="active run run-active00001"):
        specs.spec_delete(store, spec["id"])


@pytest.mark.parametrize(("action", "status"), [("complete", "completed"), ("skip", "skipped")])
def test_set_status_transitions_and_reopen(store: Store, action: str, status: str) -> None:
    spec = specs.spec_create(store, "a", body())
    assert specs.spec_set_status(store, spec["id"], action)["status"] == status
    assert specs.spec_set_status(store, spec["id"], "reopen")["status"] == "pending"


def test_set_status_applies_to_standalone_specs_only(store: Store) -> None:
    spec = specs.spec_create(store, "a", body())
    bind_to_graph(store, spec["id"])
    with pytest.raises(Refused, match="standalone specs only"):
        specs.spec_set_status(store, spec["id"], "complete")
    assert specs.spec_get(store, spec["id"])["status"] == "pending"


def test_set_status_refuses_an_unknown_action(store: Store) -> None:
    spec = specs.spec_create(store, "a", body())
    with pytest.raises(Refused, match="unknown set_status action 'finish'"):
        specs.spec_set_status(store, spec["id"], "finish")


def test_unique_prefix_resolves_and_ambiguous_prefix_lists_candidates(store: Store) -> None:
    a = specs.spec_create(store, "a", body())
    b = specs.spec_create(store, "b", body())
    assert specs.spec_get(store, a["id"][:-2])["id"] == a["id"]
    assert specs.spec_get(store, a["id"].removeprefix("spec-"))["id"] == a["id"]
    with pytest.raises(Refused) as refusal:
        specs.spec_get(store, "spec-")
    assert a["id"] in str(refusal.value)
    assert b["id"] in str(refusal.value)
    assert "ambiguous" in str(refusal.value)


@pytest.mark.parametrize("name", ["", "   ", "two\nlines"])
def test_names_must_be_one_non_empty_line(store: Store, name: str) -> None:
    with pytest.raises(Refused, match="spec name"):
        specs.spec_create(store, name, body())


def test_update_with_nothing_to_change_is_refused(store: Store) -> None:
    spec = specs.spec_create(store, "a", body())
    with pytest.raises(Refused, match="at least one"):
        specs.spec_update(store, spec["id"])
