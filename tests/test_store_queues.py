"""Spec queues and context groups (reference: "Spec queues"), on every backend."""

import pytest

from canopy.errors import Refused
from canopy.ops import graphs, queues, specs
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.conftest import body, insert, snapshot
from tests.test_graphs import example, insert_run, insert_run_specs

pytestmark = pytest.mark.store


def new_specs(store: Store, count: int) -> list[str]:
    return [specs.spec_create(store, f"s{i}", body(f"spec {i}"))["id"] for i in range(count)]


def order(store: Store, queue_id: str) -> list[tuple[str, str | None]]:
    listing = queues.queue_list(store, queue_id)
    assert [m["position"] for m in listing["members"]] == list(
        range(1, len(listing["members"]) + 1)
    )
    return [(m["spec_id"], m["group"]) for m in listing["members"]]


def test_create_gives_an_empty_queue(store: Store) -> None:
    queue = queues.queue_create(store, "nightly")
    assert queue["id"].startswith("queue-")
    assert queue["members"] == []


def test_add_appends_and_list_shows_position_group_and_status(store: Store) -> None:
    a, b = new_specs(store, 2)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a)
    listing = queues.queue_add_spec(store, queue, b, group="auth")
    assert listing["members"] == [
        {"position": 1, "spec_id": a, "name": "s0", "group": None, "status": "pending"},
        {"position": 2, "spec_id": b, "name": "s1", "group": "auth", "status": "pending"},
    ]


def test_grouped_add_lands_right_after_the_groups_last_pending_member(store: Store) -> None:
    a, b, c, d = new_specs(store, 4)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a, group="g")
    queues.queue_add_spec(store, queue, b)
    queues.queue_add_spec(store, queue, c)
    queues.queue_add_spec(store, queue, d, group="g")
    assert order(store, queue) == [(a, "g"), (d, "g"), (b, None), (c, None)]


def test_grouped_add_skips_past_finished_members_of_the_group(store: Store) -> None:
    a, b, c, d = new_specs(store, 4)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a, group="g")
    queues.queue_add_spec(store, queue, b, group="g")
    queues.queue_add_spec(store, queue, c)
    specs.spec_set_status(store, b, "complete")
    queues.queue_add_spec(store, queue, d, group="g")
    assert [spec for spec, _ in order(store, queue)] == [a, d, b, c]


def test_adding_a_member_twice_is_refused(store: Store) -> None:
    (a,) = new_specs(store, 1)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a)
    before = snapshot(store)
    with pytest.raises(Refused, match="already in queue"):
        queues.queue_add_spec(store, queue, a, group="g")
    assert snapshot(store) == before


def test_list_all_queues_with_counts(store: Store) -> None:
    a, b = new_specs(store, 2)
    first = queues.queue_create(store, "first")["id"]
    second = queues.queue_create(store, "second")["id"]
    queues.queue_add_spec(store, first, a)
    queues.queue_add_spec(store, first, b)
    specs.spec_set_status(store, b, "skip")
    listed = queues.queue_list(store)["queues"]
    assert [(q["id"], q["name"], q["members"], q["pending"]) for q in listed] == [
        (first, "first", 2, 1),
        (second, "second", 0, 0),
    ]


def test_remove_spec_closes_the_gap_and_keeps_the_spec(store: Store) -> None:
    a, b, c = new_specs(store, 3)
    queue = queues.queue_create(store, "q")["id"]
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue, spec)
    queues.queue_remove_spec(store, queue, b)
    assert [spec for spec, _ in order(store, queue)] == [a, c]
    assert specs.spec_get(store, b)["status"] == "pending"
    with pytest.raises(Refused, match="is not in queue"):
        queues.queue_remove_spec(store, queue, b)


def test_reorder_is_a_full_replacement(store: Store) -> None:
    a, b, c = new_specs(store, 3)
    queue = queues.queue_create(store, "q")["id"]
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue, spec)
    queues.queue_reorder(store, queue, [c, a[:-1], b])
    assert [spec for spec, _ in order(store, queue)] == [c, a, b]


def test_reorder_refusals_name_missing_extra_and_duplicate_and_change_nothing(
    store: Store,
) -> None:
    a, b, c, outsider = new_specs(store, 4)
    queue = queues.queue_create(store, "q")["id"]
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue, spec)
    before = snapshot(store)
    with pytest.raises(Refused) as refusal:
        queues.queue_reorder(store, queue, [a, a, outsider])
    message = str(refusal.value)
    assert f"missing {b}, {c}" in message
    assert f"extra {outsider}" in message
    assert f"duplicate {a}" in message
    assert snapshot(store) == before


def test_reorder_refuses_splitting_a_group_and_reports_positions(store: Store) -> None:
    a, b, c = new_specs(store, 3)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a, group="g")
    queues.queue_add_spec(store, queue, b, group="g")
    queues.queue_add_spec(store, queue, c)
    before = snapshot(store)
    with pytest.raises(Refused, match="positions 1, 3 split by positions 2"):
        queues.queue_reorder(store, queue, [a, c, b])
    assert snapshot(store) == before


def test_set_group_moves_the_member_next_to_its_group(store: Store) -> None:
    a, b, c, d = new_specs(store, 4)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a, group="g")
    queues.queue_add_spec(store, queue, b)
    queues.queue_add_spec(store, queue, c)
    queues.queue_add_spec(store, queue, d)
    queues.queue_set_group(store, queue, d, "g")
    assert order(store, queue) == [(a, "g"), (d, "g"), (b, None), (c, None)]


def test_set_group_clear(store: Store) -> None:
    a, b = new_specs(store, 2)
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a, group="g")
    queues.queue_add_spec(store, queue, b, group="g")
    queues.queue_set_group(store, queue, b, None)
    assert order(store, queue) == [(a, "g"), (b, None)]


def test_set_group_on_a_non_member_is_refused(store: Store) -> None:
    (a,) = new_specs(store, 1)
    queue = queues.queue_create(store, "q")["id"]
    with pytest.raises(Refused, match="is not in queue"):
        queues.queue_set_group(store, queue, a, "g")


def test_queue_ids_resolve_by_prefix(store: Store) -> None:
    queue = queues.queue_create(store, "q")["id"]
    assert queues.queue_list(store, queue[:-3])["id"] == queue
    with pytest.raises(Refused, match="no queue matches"):
        queues.queue_list(store, "queue-zzzzzzzzzzzz")


def test_queues_resolve_by_exact_name_and_names_are_unique(store: Store) -> None:
    nightly = queues.queue_create(store, "nightly")["id"]
    assert queues.queue_list(store, "nightly")["id"] == nightly
    with pytest.raises(Refused, match=f"queue name 'nightly' is taken by {nightly}"):
        queues.queue_create(store, "nightly")


def test_a_name_shared_by_older_queues_is_refused_as_ambiguous(store: Store) -> None:
    nightly = queues.queue_create(store, "nightly")["id"]
    with store.transaction() as rows:
        insert(rows, "queues", id="queue-older00001", name="nightly", created_at=utcnow())
    with pytest.raises(Refused) as refusal:
        queues.queue_list(store, "nightly")
    assert nightly in str(refusal.value)
    assert "queue-older00001" in str(refusal.value)


@pytest.mark.parametrize(("field", "limit"), [("name", 400), ("group", 200)])
def test_overlong_names_and_groups_are_refused(store: Store, field: str, limit: int) -> None:
    (spec,) = new_specs(store, 1)
    queue = queues.queue_create(store, "q")["id"]
    with pytest.raises(Refused, match=f"must be at most {limit} characters"):
        if field == "name":
            queues.queue_create(store, "x" * (limit + 1))
        else:
            queues.queue_add_spec(store, queue, spec, group="g" * (limit + 1))


def test_list_of_one_queue_gives_its_latest_runs_outcomes(store: Store) -> None:
    """The queue page's "outcome of the latest run": the run started last over
    the queue, whichever graph ran it, and each spec's latest passage in it."""
    a, b, c = new_specs(store, 3)
    queue = queues.queue_create(store, "nightly")["id"]
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue, spec)
    assert queues.queue_list(store, queue)["latest_run"] is None
    first = graphs.graph_create(store, example(name="first"))["id"]
    second = graphs.graph_create(store, example(name="second"))["id"]
    older = insert_run(store, first, 1, "completed", queue_id=queue)
    insert_run_specs(store, older, [(a, None, "completed"), (b, None, "completed")])
    latest = insert_run(store, second, 2, "running", queue_id=queue)
    insert_run_specs(store, latest, [(a, None, "limit_blocked"), (b, None, "failed")])
    insert_run_specs(store, latest, [(a, None, None)])  # a again, under way
    insert_run(store, first, 3, "completed")  # over bound specs: not this queue's

    run = queues.queue_list(store, queue)["latest_run"]
    assert {k: run[k] for k in ("id", "graph_id", "graph", "number", "status")} == {
        "id": latest,
        "graph_id": second,
        "graph": "second",
        "number": 2,
        "status": "running",
    }
    assert run["outcomes"] == {a: None, b: "failed"}  # c not reached
    assert run["started_at"].endswith("Z") and run["ended_at"] is None
    assert queues.queue_add_spec(store, queue, new_specs(store, 1)[0])["latest_run"] == run
