"""Message delivery by the daemon (reference: session paragraphs), on the real
dev server with an in-process worker and the fake agent standing in for the harness.
"""

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from canopy.errors import Refused
from canopy.ops import graphs, notifications, runs
from canopy.ops import sessions as ops
from canopy.ops.session_wake import (
    resume_session,
    send_message,
    wait_for_delivery,
    wake_session,
    wake_stalled_sessions,
)
from canopy.sessions.transcripts import read_turns
from canopy.store.engine import Store
from tests import engine
from tests.conftest import make_specs, snapshot
from tests.engine import FAKE_AGENT, agent_runs, eventually

pytestmark = pytest.mark.server
TIMEOUT = 60.0


store = engine.home_store
"""Here the store is the one the worker's activities write: this test's data dir."""


async def deliver(store: Store, session: str, prompt: str) -> dict[str, Any]:
    """``session send --wait``: queue, wake the daemon, wait until it settled the message."""
    sent = await send_message(store, session, prompt)
    assert "warning" not in sent, sent
    return await wait_for_delivery(store, sent["id"], TIMEOUT)


async def test_messages_are_turns_of_one_conversation_in_order(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    session = ops.session_new(store, "claude", name="pair", workdir=str(repo))
    first = await deliver(store, "pair", "FAKE: say hello there")
    assert first["status"] == "delivered", first
    assert first["delivery"]["session_id"] == session["id"]
    assert first["delivery"]["reply"] == "fake agent done"
    conversation = agent_runs(record)[0]["session_id"]
    assert ops.session_get(store, "pair")["harness_conversation_id"] == conversation

    queued = [ops.session_send(store, "pair", f"FAKE: say number {n}") for n in (1, 2, 3)]
    await wake_session(serving, str(session["id"]))
    for message in queued:
        assert (await wait_for_delivery(store, message["id"], TIMEOUT))["status"] == "delivered"

    turns = agent_runs(record)
    assert [t["prompt"] for t in turns] == [
        "FAKE: say hello there",
        *(f"FAKE: say number {n}" for n in (1, 2, 3)),
    ]
    assert [t["resumed"] for t in turns] == [None, conversation, conversation, conversation]
    assert all(t["cwd"] == str(repo) for t in turns)
    transcript = read_turns(Path(str(session["transcript_path"])))
    assert [(t["message_id"], t["status"]) for t in transcript] == [
        (first["id"], "delivered"),
        *((m["id"], "delivered") for m in queued),
    ]
    assert transcript[0]["reply"] == "fake agent done"
    assert transcript[0]["provenance"]["source"] == "promptbuilder"


async def test_a_message_whose_session_is_gone_is_kept_and_reported(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    session = ops.session_new(store, "claude", name="pair", workdir=str(repo))
    queued = ops.session_send(store, "pair", "are you there?")
    ops.session_close(store, "pair")
    await wake_session(serving, str(session["id"]))
    settled = await wait_for_delivery(store, queued["id"], TIMEOUT)
    assert settled["status"] == "session_not_found"
    assert agent_runs(record) == []
    (recalled,) = ops.session_recall(store)["messages"]
    assert (recalled["id"], recalled["prompt"]) == (queued["id"], "are you there?")
    (note,) = notifications.notifications_list(store)["notifications"]
    assert note["kind"] == "session_not_found"
    assert note["message_id"] == queued["id"] and "was closed" in note["text"]


async def test_a_failed_turn_is_recorded_recallable_and_the_next_message_goes(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    ops.session_new(store, "claude", name="pair", workdir=str(repo))
    failed = await deliver(store, "pair", "FAKE: exit 3")
    assert failed["status"] == "failed"
    assert failed["error"] == "the turn exited with code 3"
    assert (await deliver(store, "pair", "again"))["status"] == "delivered"
    assert [m["id"] for m in ops.session_recall(store, "pair")["messages"]] == [failed["id"]]


async def test_interactive_hooks_enqueue_with_provenance_and_are_delivered(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    reviewer = ops.session_new(store, "claude", name="reviewer", workdir=str(repo))
    (spec,) = make_specs(store, "alpha")
    graph = graphs.graph_create(
        store,
        {
            "name": "build",
            "workdir": str(repo),
            "nodes": [{"name": "work", "command": "true"}],
            "specs": [spec],
            "hooks": {
                "on_completed": [
                    {"prompt": "by name: {{completed_specs}}", "target_session_name": "reviewer"},
                    {"prompt": "by id {{spec_id}}", "target_session_id": reviewer["id"]},
                    {"prompt": "lost", "target_session_id": "sess-neverseen00"},
                    {"prompt": "nobody", "target_session_name": "nobody"},
                ]
            },
        },
    )
    await runs.graph_run(store, graph["id"])
    await runs.wait_until_settled(store, graph["id"], TIMEOUT)
    with store.transaction() as rows:
        found = rows("SELECT status, output, error FROM hook_runs ORDER BY id", {})
    hook_runs = [(h["status"], h["output"], h["error"]) for h in found]
    assert [status for status, _, _ in hook_runs] == ["succeeded", "succeeded", "failed", "failed"]
    assert "session sess-neverseen00 not found" in str(hook_runs[2][2])
    assert hook_runs[3][2] == "no live session is named 'nobody'"

    transcript = Path(str(reviewer["transcript_path"]))

    def both_turns() -> list[dict[str, Any]] | None:
        entries = read_turns(transcript)
        return entries if len(entries) == 2 else None

    entries = await eventually(both_turns, "both hook messages delivered")
    by_name, by_id = entries
    assert by_name["prompt"] == "by name: alpha: alpha summary"
    assert by_name["provenance"] == {
        "source": "hook",
        "graph_id": graph["id"],
        "run_id": by_name["provenance"]["run_id"],
        "event": "on_completed",
        "target_name": "reviewer",
        "hook_run_id": by_name["provenance"]["hook_run_id"],
    }
    assert by_id["prompt"] == "by id (none)"
    assert by_id["provenance"]["target_name"] is None
    assert {e["session_id"] for e in entries} == {reviewer["id"]}
    assert [m["prompt"] for m in ops.session_recall(store)["messages"]] == ["lost", "nobody"]


async def test_a_usage_limit_waits_for_the_reset_then_delivers_the_same_message(
    time_skipping: WorkflowEnvironment, store: Store, repo: Path, record: Path, tmp_path: Path
) -> None:
    session = ops.session_new(store, "claude", name="pair", workdir=str(repo))
    queued = ops.session_send(store, "pair", f"FAKE: limit-once {tmp_path / 'limited'} 7200")
    await wake_session(time_skipping.client, str(session["id"]))

    def waiting() -> dict[str, Any] | None:
        message = ops.message_get(store, queued["id"])
        return message if message["status"] == "waiting" else None

    waited = await eventually(waiting, "the message to wait for the reset")
    assert waited["delivery"]["retry_at"] is not None
    assert "You've hit your session limit" in waited["error"], "the CLI's own words"
    assert "(resets at " in waited["error"], "and the time chosen from them"
    await time_skipping.sleep(timedelta(hours=2, minutes=1))
    delivered = await wait_for_delivery(store, queued["id"], TIMEOUT)
    assert delivered["status"] == "delivered"
    assert delivered["delivery"]["attempts"] == 2
    first, second = agent_runs(record)
    assert second["resumed"] == first["session_id"], "the retry resumes the conversation"


def converse_by_hand(repo: Path, prompt: str) -> str:
    """Run the (fake) claude CLI in the workdir outside Canopy; its conversation id."""
    done = subprocess.run(
        [sys.executable, str(FAKE_AGENT), "-p", "--output-format", "stream-json", "--verbose",
         "--", prompt],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return str(json.loads(done.stdout.splitlines()[0])["session_id"])


async def test_resuming_harness_conversations_seen_and_never_seen(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    pair = ops.session_new(store, "claude", name="pair", workdir=str(repo))
    assert (await deliver(store, "pair", "first turn"))["status"] == "delivered"
    seen = str(ops.session_get(store, "pair")["harness_conversation_id"])
    ops.session_close(store, "pair")
    never_seen = converse_by_hand(repo, "by hand")
    listed = ops.harness_conversations(store, "claude", str(repo))["conversations"]
    assert [(c["conversation_id"], c["session_id"], c["title"]) for c in listed] == [
        (never_seen, None, "by hand"),
        (seen, pair["id"], "first turn"),
    ]

    again = ops.session_resume_conversation(store, seen, "claude", str(repo))
    assert (again["id"], again["name"], again["status"]) == (pair["id"], "pair", "live")
    ops.session_close(store, "pair")

    fresh = ops.session_resume_conversation(store, never_seen, "claude", str(repo))
    assert fresh["id"] != pair["id"] and fresh["name"] != "pair"
    assert fresh["harness_conversation_id"] == never_seen
    with store.transaction() as rows:
        by_old_id = ops.enqueue_hook_message(
            rows, "hi", target_session_id=str(pair["id"]), target_session_name=None,
            graph_id="graph-x", run_id="run-x", event="on_completed", hook_run_id=1,
        )  # fmt: skip
        assert by_old_id["status"] == "session_not_found"
        assert by_old_id["error"] is not None and str(pair["id"]) in by_old_id["error"]

    resumed_turn = await deliver(store, str(fresh["name"]), "continue by hand")
    assert resumed_turn["delivery"]["session_id"] == fresh["id"]
    assert agent_runs(record)[-1]["resumed"] == never_seen


def test_resuming_a_conversation_the_harness_does_not_have_is_refused(
    canopy_home: Path, home_store: Store, repo: Path
) -> None:
    before = snapshot(home_store)
    with pytest.raises(Refused, match=f"claude has no conversation 'nope' in {repo}"):
        ops.session_resume_conversation(home_store, "nope", "claude", str(repo))
    assert snapshot(home_store) == before


async def test_resume_hands_over_messages_queued_before_the_close(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    session = ops.session_new(store, "claude", name="pair", workdir=str(repo))
    queued = ops.session_send(store, "pair", "still there?")  # no daemon has seen it yet
    ops.session_close(store, "pair")
    resumed = await resume_session(store, str(session["id"]), None, None, None)
    assert (resumed["status"], resumed["queued_messages"]) == ("live", 1)
    assert "warning" not in resumed
    assert (await wait_for_delivery(store, queued["id"], TIMEOUT))["status"] == "delivered"
    with pytest.raises(Refused, match="resuming a session takes no platform or workdir"):
        await resume_session(store, "pair", None, "claude", None)


async def test_the_daemon_sweep_wakes_only_sessions_nobody_is_delivering(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    ops.session_new(store, "claude", name="busy", workdir=str(repo))
    idle = ops.session_new(store, "claude", name="idle", workdir=str(repo))
    long_turn = await send_message(store, "busy", "FAKE: sleep 3")
    await eventually(lambda: agent_runs(record), "the busy session's turn to start")
    stranded = ops.session_send(store, "idle", "queued while nobody was delivering")
    assert await wake_stalled_sessions(serving, store) == [idle["id"]]
    for message in (long_turn, stranded):
        assert (await wait_for_delivery(store, message["id"], TIMEOUT))["status"] == "delivered"
    assert await wake_stalled_sessions(serving, store) == []
