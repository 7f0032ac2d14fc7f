"""Sessions and message targeting in the store (reference "Event-keyed hooks", session
paragraphs). Delivery through the daemon is in ``test_session_delivery.py``.
"""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from canopy.errors import Refused
from canopy.limits import TEXT_MAX_LENGTH
from canopy.ops import notifications
from canopy.ops import sessions as ops
from canopy.sessions.names import ADJECTIVES, NOUNS
from canopy.store.engine import Store
from tests.cli_helpers import run_canopy
from tests.conftest import snapshot

GENERATED = re.compile(rf"({'|'.join(ADJECTIVES)})-({'|'.join(NOUNS)})(-\d+)?")


@pytest.fixture
def workdir(tmp_path: Path, canopy_home: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def new(store: Store, workdir: Path, name: str | None = None) -> dict[str, object]:
    return ops.session_new(store, "claude", name=name, workdir=str(workdir))


def hook_message(
    store: Store, *, session_id: str | None = None, name: str | None = None
) -> SimpleNamespace:
    """What an interactive hook enqueues at one fire (resolved then and there): the
    message's fields, its provenance's among them."""
    with store.transaction() as rows:
        message = ops.enqueue_hook_message(
            rows,
            "review {{graph_name}} (rendered)",
            target_session_id=session_id,
            target_session_name=name,
            graph_id="graph-x",
            run_id="run-x",
            event="on_completed",
            hook_run_id=7,
        )
    return SimpleNamespace(**message, **message["provenance"])


def test_a_new_session_is_live_with_a_generated_name(store: Store, workdir: Path) -> None:
    created = new(store, workdir)
    assert created["status"] == "live"
    assert GENERATED.fullmatch(str(created["name"]))
    assert str(created["id"]).startswith("sess-")
    assert created["harness_conversation_id"] is None
    assert created["workdir"] == str(workdir)
    assert ops.session_list(store)["sessions"] == [created]


def test_new_refuses_bad_input_and_writes_nothing(store: Store, workdir: Path) -> None:
    before = snapshot(store)
    with pytest.raises(Refused, match="unknown platform 'nope'"):
        ops.session_new(store, "nope", workdir=str(workdir))
    with pytest.raises(Refused, match="is not an existing directory"):
        ops.session_new(store, "claude", workdir=str(workdir / "missing"))
    with pytest.raises(Refused, match="session name must not be empty"):
        ops.session_new(store, "claude", name="  ", workdir=str(workdir))
    assert snapshot(store) == before


def test_list_shows_the_live_set_and_all_with_finished(store: Store, workdir: Path) -> None:
    kept, closed = new(store, workdir, "kept"), new(store, workdir, "closed")
    ops.session_close(store, str(closed["id"]))
    assert [s["id"] for s in ops.session_list(store)["sessions"]] == [kept["id"]]
    everything = ops.session_list(store, include_finished=True)["sessions"]
    assert [(s["id"], s["status"]) for s in everything] == [
        (kept["id"], "live"),
        (closed["id"], "finished"),
    ]


def test_resume_keeps_the_id_and_the_name_without_a_conversation_id(
    store: Store, workdir: Path
) -> None:
    created = new(store, workdir, "reviewer")
    ops.session_close(store, "reviewer")
    resumed = ops.session_resume(store, str(created["id"]))
    assert (resumed["id"], resumed["name"], resumed["status"]) == (
        created["id"],
        "reviewer",
        "live",
    )
    assert resumed["harness_conversation_id"] is None
    assert hook_message(store, session_id=str(created["id"])).session_id == created["id"]
    assert hook_message(store, name="reviewer").session_id == created["id"]


def test_resume_takes_a_fresh_name_only_when_a_live_session_holds_it(
    store: Store, workdir: Path
) -> None:
    first = new(store, workdir, "reviewer")
    ops.session_close(store, str(first["id"]))
    second = new(store, workdir, "reviewer")
    resumed = ops.session_resume(store, str(first["id"]))
    assert resumed["id"] == first["id"]
    assert resumed["name"] != "reviewer"
    assert GENERATED.fullmatch(str(resumed["name"]))
    assert hook_message(store, name="reviewer").session_id == second["id"]


def test_resume_refuses_a_live_session(store: Store, workdir: Path) -> None:
    created = new(store, workdir, "busy")
    with pytest.raises(Refused, match=f"session {created['id']} \\(busy\\) is already live"):
        ops.session_resume(store, "busy")


def test_a_hook_by_id_reaches_exactly_that_session(store: Store, workdir: Path) -> None:
    target, _other = new(store, workdir, "same"), new(store, workdir, "same")
    message = hook_message(store, session_id=str(target["id"]))
    assert (message.status, message.session_id) == ("queued", target["id"])
    assert (message.source, message.graph_id, message.event) == ("hook", "graph-x", "on_completed")
    assert message.target_name is None


def test_a_hook_by_an_unknown_id_fails_naming_it_and_keeps_the_prompt(
    store: Store, workdir: Path
) -> None:
    new(store, workdir, "reviewer")
    message = hook_message(store, session_id="sess-gone000000")
    assert message.status == "session_not_found"
    assert message.error is not None and "session sess-gone000000 not found" in message.error
    recalled = ops.session_recall(store)["messages"]
    assert [(m["id"], m["prompt"]) for m in recalled] == [
        (message.id, "review {{graph_name}} (rendered)")
    ]
    (note,) = notifications.notifications_list(store)["notifications"]
    assert note["kind"] == "session_not_found" and "sess-gone000000" in note["text"]


def test_a_hook_by_name_resolves_fresh_at_every_fire(store: Store, workdir: Path) -> None:
    no_match = hook_message(store, name="reviewer")
    assert no_match.status == "session_not_found"
    assert no_match.error == "no live session is named 'reviewer'"
    assert no_match.target_name == "reviewer"

    first = new(store, workdir, "reviewer")
    one = hook_message(store, name="reviewer")
    assert (one.status, one.session_id, one.target_name) == ("queued", first["id"], "reviewer")

    second = new(store, workdir, "reviewer")
    several = hook_message(store, name="reviewer")
    assert several.status == "session_not_found"
    assert several.error == (
        f"2 live sessions are named 'reviewer': {first['id']}, {second['id']}; target one by id"
    )

    ops.session_close(store, str(first["id"]))
    again = hook_message(store, name="reviewer")
    assert (again.status, again.session_id) == ("queued", second["id"])


def test_send_queues_a_promptbuilder_message(store: Store, workdir: Path) -> None:
    created = new(store, workdir, "pair")
    sent = ops.session_send(store, "pair", "please refactor")
    assert sent["status"] == "queued"
    assert sent["session_id"] == created["id"]
    assert sent["provenance"]["source"] == "promptbuilder"
    assert ops.session_list(store)["sessions"][0]["queued_messages"] == 1


def test_send_refuses_a_finished_session_and_an_empty_prompt(store: Store, workdir: Path) -> None:
    created = new(store, workdir, "pair")
    ops.session_close(store, "pair")
    before = snapshot(store)
    with pytest.raises(Refused, match=f"session {created['id']} \\(pair\\) is finished"):
        ops.session_send(store, "pair", "hello")
    with pytest.raises(Refused, match="prompt must not be empty"):
        ops.session_send(store, str(created["id"]), " \n")
    with pytest.raises(Refused, match="no session matches 'nobody'"):
        ops.session_send(store, "nobody", "hello")
    assert snapshot(store) == before


def test_send_refuses_a_prompt_over_the_text_limit(store: Store, workdir: Path) -> None:
    """A prompt too long to pass as one command-line argument on Linux is still refused
    by the operation, with nothing stored (MCP and the TUI hand it over whole)."""
    new(store, workdir, "pair")
    before = snapshot(store)
    too_long = "x" * (TEXT_MAX_LENGTH + 1)
    with pytest.raises(Refused, match=f"prompt: must be at most {TEXT_MAX_LENGTH} characters"):
        ops.session_send(store, "pair", too_long)
    assert snapshot(store) == before
    assert ops.session_send(store, "pair", too_long[1:])["status"] == "queued"


def test_an_ambiguous_name_is_refused_listing_the_ids(store: Store, workdir: Path) -> None:
    a, b = new(store, workdir, "twin"), new(store, workdir, "twin")
    with pytest.raises(Refused, match=f"ambiguous: {a['id']}, {b['id']}; use an id"):
        ops.session_send(store, "twin", "hello")


def test_the_cli_stores_a_message_even_when_temporal_is_down(tmp_path: Path) -> None:
    """`session send` writes first: with no server the message stays queued, with a
    warning, and the daemon delivers it when it starts (it wakes queued sessions)."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    created = run_canopy(home, "session", "new", "--platform", "claude", "--workdir", str(work),
                         "--name", "pair", "--json")  # fmt: skip
    assert created.code == 0, created.stderr
    down = {"TEMPORAL_ADDRESS": "127.0.0.1:1"}
    sent = run_canopy(home, "session", "send", "pair", "hello", "--json", env=down)
    assert sent.code == 0, sent.stderr
    message = sent.json()
    assert message["status"] == "queued"
    assert "delivered when the worker starts" in message["warning"]
    listed = run_canopy(home, "session", "list", "--json").json()["sessions"]
    assert [(s["name"], s["queued_messages"]) for s in listed] == [("pair", 1)]
    assert run_canopy(home, "notifications", "--json").json() == {"notifications": []}
    refused = run_canopy(home, "session", "send", "pair", "  ")
    assert (refused.code, refused.stderr) == (1, "error: prompt must not be empty\n")
