"""Event-keyed hooks as ``graph_create`` / ``graph_edit`` accept and store them.

Store-level, on every backend: each refusal is one line naming the event and hook index
and writes nothing; ``spec_ids`` resolve to full ids against the bound specs and the
active run's queue; the legacy top-level ``on_completed`` object is registered as a hook;
an edit replaces the events it names; an edit of hooks during a run names the events
still to come; and what is stored is exactly what the firing side will run.
"""

import copy
import re
from typing import Any

import pytest

from canopy.activities.hooks import matching_spec
from canopy.contracts.graph_run import HookFiring
from canopy.errors import Refused
from canopy.graphs.markers import HOOK_MARKERS
from canopy.ops import graphs, queues
from canopy.store.engine import Store
from canopy.store.queries import stored_json
from canopy.timefmt import utcnow
from tests.conftest import body, insert, snapshot, update
from tests.test_graphs import example, insert_run

pytestmark = pytest.mark.store

AGENT = {"platform": "claude", "prompt": "Update the docs for {{completed_specs}}"}
COMMAND = {"command": "notify-done.sh {{spec_name}}"}
INTERACTIVE = {"prompt": "{{graph_name}} is done", "target_session_name": "docs"}
SUPPORTED = "supported: " + ", ".join(HOOK_MARKERS)
ALL_REMAINING = ["on_spec_completed", "on_blocked", "on_completed", "on_failed"]


def add_spec(store: Store, spec_id: str, status: str = "pending") -> str:
    """A spec with a chosen id, so prefixes and ambiguity can be set up exactly."""
    now = utcnow()
    with store.transaction() as rows:
        insert(
            rows,
            "specs",
            id=spec_id,
            name=spec_id,
            body=body(),
            status=status,
            created_at=now,
            updated_at=now,
        )
    return spec_id


def set_status(store: Store, spec_id: str, status: str) -> None:
    with store.transaction() as rows:
        update(rows, "specs", spec_id, status=status)


def end_run(store: Store, run_id: str) -> None:
    with store.transaction() as rows:
        update(rows, "runs", run_id, status="completed")


def stored_hooks(store: Store, graph_id: str) -> dict[str, Any]:
    """The hooks exactly as the firing activity reads them (the graph row's column)."""
    with store.transaction() as rows:
        (row,) = rows(
            "SELECT CAST(hooks AS TEXT) AS hooks FROM graphs WHERE id = :id", {"id": graph_id}
        )
    hooks: dict[str, Any] = stored_json(row["hooks"])
    return hooks


def queue_of(store: Store, *spec_ids: str) -> str:
    queue_id: str = queues.queue_create(store, "q")["id"]
    for spec_id in spec_ids:
        queues.queue_add_spec(store, queue_id, spec_id)
    return queue_id


# --------------------------------------------------------------------------- refusals

HOOK_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    (
        "unknown event",
        {"on_done": [COMMAND]},
        "hooks: unknown event 'on_done'; events: "
        "on_completed, on_failed, on_blocked, on_spec_completed",
    ),
    (
        "two modes",
        {"on_completed": [COMMAND, {**AGENT, "command": "x"}]},
        "hooks.on_completed[1]: a hook has exactly one mode: agent (platform + prompt), "
        "command (command) or interactive (prompt + target_session_id or "
        "target_session_name); this one has platform and command",
    ),
    (
        "agent and interactive",
        {"on_failed": [{**AGENT, "target_session_id": "sess-1"}]},
        "hooks.on_failed[0]: a hook has exactly one mode: ",
    ),
    (
        "no mode",
        {"on_blocked": [{"prompt": "x"}]},
        "hooks.on_blocked[0]: a hook has exactly one mode: agent (platform + prompt), "
        "command (command) or interactive (prompt + target_session_id or "
        "target_session_name); this one has none of platform, command, "
        "target_session_id, target_session_name",
    ),
    (
        "both targets",
        {"on_completed": [{**INTERACTIVE, "target_session_id": "sess-1"}]},
        "hooks.on_completed[0]: an interactive hook names exactly one of "
        "target_session_id / target_session_name",
    ),
    (
        "interactive without prompt",
        {"on_completed": [{"target_session_id": "sess-1"}]},
        "hooks.on_completed[0]: an interactive hook needs a prompt",
    ),
    (
        "agent without prompt",
        {"on_completed": [{"platform": "claude"}]},
        "hooks.on_completed[0]: an agent hook needs a prompt",
    ),
    (
        "prompt on a command",
        {"on_completed": [{**COMMAND, "prompt": "x"}]},
        "hooks.on_completed[0]: a command hook takes no prompt; the command is the whole hook",
    ),
    (
        "model on a command",
        {"on_completed": [{**COMMAND, "model": "sonnet"}]},
        "hooks.on_completed[0]: model, effort, permissions and timeout_minutes apply to agent "
        "hooks only",
    ),
    (
        "timeout on an interactive hook",
        {"on_completed": [{**INTERACTIVE, "timeout_minutes": 5}]},
        "hooks.on_completed[0]: model, effort, permissions and timeout_minutes apply to agent "
        "hooks only",
    ),
    (
        "zero timeout",
        {"on_completed": [{**AGENT, "timeout_minutes": 0}]},
        "hooks.on_completed[0].timeout_minutes: 0 is out of range; it must be between 1 and "
        "10080 minutes (7 days)",
    ),
    (
        "unknown field",
        {"on_spec_completed": [{**COMMAND, "comand": "x"}]},
        "unknown field hooks.on_spec_completed[0].comand",
    ),
    (
        "unknown platform",
        {"on_completed": [{**AGENT, "platform": "clod"}]},
        "hooks.on_completed[0].platform: unknown platform 'clod'; known platforms: claude",
    ),
    (
        "unknown prompt marker",
        {"on_completed": [{**AGENT, "prompt": "{{spec_body}}"}]},
        f"hooks.on_completed[0]: unknown marker {{{{spec_body}}}} in prompt; {SUPPORTED}",
    ),
    (
        "unknown command marker",
        {"on_spec_completed": [{"command": "echo {{target}}"}]},
        f"hooks.on_spec_completed[0]: unknown marker {{{{target}}}} in command; {SUPPORTED}",
    ),
    (
        "spec_ids on on_completed",
        {"on_completed": [{**COMMAND, "spec_ids": ["spec-a"]}]},
        "hooks.on_completed[0]: spec_ids is refused on on_completed: it is not a per-spec "
        "event; spec_ids apply to on_spec_completed and on_failed only",
    ),
    (
        "spec_ids on on_blocked",
        {"on_blocked": [COMMAND, {**COMMAND, "spec_ids": ["spec-a"]}]},
        "hooks.on_blocked[1]: spec_ids is refused on on_blocked: it is not a per-spec event",
    ),
    (
        "empty spec_ids",
        {"on_failed": [{**COMMAND, "spec_ids": []}]},
        "hooks.on_failed[0].spec_ids: must name at least one spec",
    ),
]


@pytest.mark.parametrize(
    ("hooks", "message"), [(h, m) for _, h, m in HOOK_REFUSALS], ids=[r[0] for r in HOOK_REFUSALS]
)
def test_a_bad_hook_is_refused_naming_event_and_index_and_nothing_is_written(
    store: Store, hooks: dict[str, Any], message: str
) -> None:
    existing = graphs.graph_create(store, example(name="keep"))
    before = snapshot(store)
    with pytest.raises(Refused) as created:
        graphs.graph_create(store, example(hooks=hooks))
    with pytest.raises(Refused) as edited:
        graphs.graph_edit(store, existing["id"], {"hooks": hooks})
    for refusal in (created, edited):
        text = str(refusal.value)
        assert text.startswith("graph definition refused: ")
        assert message in text
        assert "\n" not in text
    assert snapshot(store) == before


LEGACY_REFUSALS: list[tuple[str, Any, str]] = [
    (
        "not an object",
        None,
        "on_completed: the legacy shape is one hook config object, appended to hooks.on_completed",
    ),
    ("a list", [COMMAND], "on_completed: the legacy shape is one hook config object"),
    (
        "checked like any hook",
        {"command": "make {{nope}}"},
        "hooks.on_completed[0]: unknown marker {{nope}} in command",
    ),
    ("no spec_ids", {**COMMAND, "spec_ids": ["spec-a"]}, "spec_ids is refused on on_completed"),
]


@pytest.mark.parametrize(
    ("legacy", "message"),
    [(h, m) for _, h, m in LEGACY_REFUSALS],
    ids=[r[0] for r in LEGACY_REFUSALS],
)
def test_a_bad_legacy_on_completed_is_refused_and_nothing_is_written(
    store: Store, legacy: Any, message: str
) -> None:
    existing = graphs.graph_create(store, example(name="keep"))
    before = snapshot(store)
    with pytest.raises(Refused, match=re.escape(message)):
        graphs.graph_create(store, example(on_completed=legacy))
    with pytest.raises(Refused, match=re.escape(message)):
        graphs.graph_edit(store, existing["id"], {"on_completed": legacy})
    assert snapshot(store) == before


# --------------------------------------------------------------------------- spec_ids


def test_spec_ids_resolve_against_bound_specs_and_are_stored_in_full(store: Store) -> None:
    a = add_spec(store, "spec-aaa1111111")
    b = add_spec(store, "spec-bbb2222222")
    hooks = {
        "on_spec_completed": [{**COMMAND, "spec_ids": ["spec-aaa", "BBB2"]}],
        "on_failed": [{**COMMAND, "spec_ids": [b]}],
    }
    created = graphs.graph_create(store, example(specs=[a, b], hooks=hooks))
    assert created["hooks"] == {
        "on_spec_completed": [{**COMMAND, "spec_ids": [a, b]}],
        "on_failed": [{**COMMAND, "spec_ids": [b]}],
    }
    assert stored_hooks(store, created["id"]) == created["hooks"]


def test_spec_ids_refuse_unknown_ambiguous_and_repeated_entries(store: Store) -> None:
    a = add_spec(store, "spec-aaa1111111")
    a2 = add_spec(store, "spec-aaa2222222")
    outsider = add_spec(store, "spec-ccc3333333")  # exists, but not the graph's
    existing = graphs.graph_create(store, example(name="keep", specs=[a, a2]))
    before = snapshot(store)
    cases = [
        (
            ["spec-aaa1", "spec-nope", outsider, "no way!"],
            "graph definition refused: hooks.on_failed[0].spec_ids: unknown specs "
            f"'spec-nope', '{outsider}', 'no way!'; spec_ids name specs bound to the graph "
            "or members of its active run's queue",
        ),
        (
            ["aaa"],
            "graph definition refused: hooks.on_failed[0].spec_ids: ambiguous spec id 'aaa': "
            f"matches {a}, {a2}",
        ),
        (
            [a, "spec-aaa1"],
            f"graph definition refused: hooks.on_failed[0].spec_ids: spec {a} is listed twice",
        ),
    ]
    for spec_ids, message in cases:
        hooks = {"on_failed": [{**COMMAND, "spec_ids": spec_ids}]}
        with pytest.raises(Refused) as refusal:
            graphs.graph_edit(store, existing["id"], {"hooks": hooks})
        assert str(refusal.value) == message
    with pytest.raises(Refused, match=f"unknown spec '{a}'"):  # bound to another graph
        graphs.graph_create(store, example(hooks={"on_failed": [{**COMMAND, "spec_ids": [a]}]}))
    assert snapshot(store) == before


def test_spec_ids_resolve_against_the_active_runs_queue_members(store: Store) -> None:
    member = add_spec(store, "spec-qqq1111111")
    bound = add_spec(store, "spec-bbb2222222")
    created = graphs.graph_create(store, example(specs=[bound]))
    run_id = insert_run(store, created["id"], 1, "running", queue_of(store, member))
    hooks = {"on_spec_completed": [{**COMMAND, "spec_ids": ["qqq", "spec-bbb"]}]}
    edited = graphs.graph_edit(store, created["id"], {"hooks": hooks})
    expected = {"on_spec_completed": [{**COMMAND, "spec_ids": [member, bound]}]}
    assert edited["hooks"] == expected
    end_run(store, run_id)
    # The run has ended: its queue is no longer a source, but what was stored stays,
    # and an edit that does not name the event does not re-resolve it.
    with pytest.raises(Refused, match="unknown spec 'qqq'"):
        graphs.graph_edit(store, created["id"], {"hooks": hooks})
    kept = graphs.graph_edit(store, created["id"], {"allow_dirty_start": True})
    assert kept["hooks"] == expected


def test_a_paused_run_counts_as_active_for_spec_ids(store: Store) -> None:
    member = add_spec(store, "spec-qqq1111111")
    created = graphs.graph_create(store, example())
    insert_run(store, created["id"], 1, "paused", queue_of(store, member))
    hooks = {"on_failed": [{**COMMAND, "spec_ids": ["qqq1"]}]}
    edited = graphs.graph_edit(store, created["id"], {"hooks": hooks})
    assert edited["hooks"]["on_failed"][0]["spec_ids"] == [member]


# --------------------------------------------------------------------------- legacy shape


def test_create_registers_the_legacy_on_completed_object_as_a_hook(store: Store) -> None:
    alone = graphs.graph_create(store, example(on_completed=AGENT))
    assert alone["hooks"] == {"on_completed": [AGENT]}
    both = graphs.graph_create(
        store,
        example(hooks={"on_completed": [COMMAND], "on_failed": [COMMAND]}, on_completed=AGENT),
    )
    assert both["hooks"] == {"on_completed": [COMMAND, AGENT], "on_failed": [COMMAND]}


def test_edit_appends_the_legacy_on_completed_object_and_keeps_the_rest(store: Store) -> None:
    created = graphs.graph_create(
        store, example(hooks={"on_completed": [COMMAND], "on_blocked": [INTERACTIVE]})
    )
    edited = graphs.graph_edit(store, created["id"], {"on_completed": AGENT})
    assert edited["hooks"] == {"on_completed": [COMMAND, AGENT], "on_blocked": [INTERACTIVE]}
    replaced = graphs.graph_edit(
        store, created["id"], {"hooks": {"on_completed": [INTERACTIVE]}, "on_completed": COMMAND}
    )
    assert replaced["hooks"]["on_completed"] == [INTERACTIVE, COMMAND]
    assert "on_completed" not in graphs.graph_get(store, created["id"])["nodes"][0]


# --------------------------------------------------------------------------- editing


def test_edit_replaces_each_named_event_and_keeps_the_others(store: Store) -> None:
    created = graphs.graph_create(
        store, example(hooks={"on_completed": [AGENT], "on_failed": [COMMAND]})
    )
    edited = graphs.graph_edit(
        store, created["id"], {"hooks": {"on_failed": [INTERACTIVE, COMMAND], "on_blocked": []}}
    )
    assert edited["hooks"] == {"on_completed": [AGENT], "on_failed": [INTERACTIVE, COMMAND]}
    cleared = graphs.graph_edit(store, created["id"], {"hooks": {"on_completed": []}})
    assert cleared["hooks"] == {"on_failed": [INTERACTIVE, COMMAND]}
    unchanged = graphs.graph_edit(store, created["id"], {"hooks": {}})
    assert unchanged["hooks"] == cleared["hooks"]
    other = graphs.graph_edit(store, created["id"], {"name": "renamed"})
    assert other["hooks"] == cleared["hooks"]
    assert stored_hooks(store, created["id"]) == cleared["hooks"]


def test_remaining_events_only_when_hooks_are_edited_during_an_active_run(store: Store) -> None:
    done = add_spec(store, "spec-ddd1111111")
    todo = add_spec(store, "spec-ttt2222222")
    created = graphs.graph_create(store, example(specs=[done, todo]))
    idle = graphs.graph_edit(store, created["id"], {"hooks": {"on_completed": [AGENT]}})
    assert "remaining_events" not in idle
    assert "hooks_note" not in idle
    run_id = insert_run(store, created["id"], 1, "running")
    set_status(store, done, "completed")
    edited = graphs.graph_edit(store, created["id"], {"hooks": {"on_failed": [COMMAND]}})
    assert edited["remaining_events"] == ALL_REMAINING
    assert edited["hooks_note"] == (
        f"the active run {run_id} fires these hooks at its remaining events: "
        "on_spec_completed, on_blocked, on_completed, on_failed "
        "(1 spec still to complete; events that already fired do not fire again)"
    )
    legacy = graphs.graph_edit(store, created["id"], {"on_completed": COMMAND})
    assert legacy["remaining_events"] == ALL_REMAINING
    not_hooks = graphs.graph_edit(store, created["id"], {"allow_dirty_start": True})
    assert "remaining_events" not in not_hooks
    set_status(store, todo, "completed")
    last = graphs.graph_edit(store, created["id"], {"hooks": {"on_blocked": [COMMAND]}})
    assert last["remaining_events"] == ["on_blocked", "on_completed", "on_failed"]
    end_run(store, run_id)
    after = graphs.graph_edit(store, created["id"], {"hooks": {"on_blocked": []}})
    assert "remaining_events" not in after


def test_remaining_events_count_a_queue_runs_members(store: Store) -> None:
    members = [add_spec(store, f"spec-qqq{n}000000") for n in range(3)]
    created = graphs.graph_create(store, example())
    run_id = insert_run(store, created["id"], 1, "paused", queue_of(store, *members))
    set_status(store, members[0], "completed")
    set_status(store, members[1], "in_progress")
    edited = graphs.graph_edit(store, created["id"], {"hooks": {"on_spec_completed": [COMMAND]}})
    assert edited["remaining_events"] == ALL_REMAINING
    assert f"the active run {run_id} fires" in edited["hooks_note"]
    assert "(2 specs still to complete;" in edited["hooks_note"]


# --------------------------------------------------------------------------- exactness


def test_stored_hooks_are_exactly_what_fires(store: Store) -> None:
    target = add_spec(store, "spec-aaa1111111")
    agent = {**AGENT, "model": "sonnet", "effort": "high", "timeout_minutes": 30}
    interactive = {"prompt": "{{spec_id}} failed at {{node}}", "target_session_id": "sess-x"}
    hooks = {
        "on_completed": [agent],
        "on_spec_completed": [{**COMMAND, "spec_ids": ["aaa"]}, COMMAND],
        "on_failed": [interactive],
    }
    created = graphs.graph_create(store, example(specs=[target], hooks=copy.deepcopy(hooks)))
    expected = {**hooks, "on_spec_completed": [{**COMMAND, "spec_ids": [target]}, COMMAND]}
    stored = stored_hooks(store, created["id"])
    assert stored == expected
    assert created["hooks"] == expected
    assert graphs.graph_get(store, created["id"])["hooks"] == expected
    assert isinstance(stored["on_completed"][0]["timeout_minutes"], int)
    firing = HookFiring(
        run_id="run-1",
        graph_id=created["id"],
        graph_name="build",
        workdir="/w",
        event="on_spec_completed",
        occurrence="1",
        spec_id=target,
    )
    assert [matching_spec(hook, firing) for hook in stored["on_spec_completed"]] == [target, True]
    other = firing.model_copy(update={"spec_id": "spec-zzz"})
    assert matching_spec(stored["on_spec_completed"][0], other) is False
