"""Human rendering of sessions, messages and notifications (``--json`` prints the data)."""

from typing import Any

from canopy.cli.render import print_block, print_line, print_table


def show_sessions(result: dict[str, Any]) -> None:
    """``session list``: one row per session."""
    rows = [
        (
            s["id"],
            s["name"],
            s["status"],
            s["platform"],
            s["workdir"],
            s["harness_conversation_id"] or "(not started)",
            s["queued_messages"],
        )
        for s in result["sessions"]
    ]
    columns = ("id", "name", "status", "platform", "workdir", "conversation", "queued")
    print_table("sessions", columns, rows)


def show_session(session: dict[str, Any]) -> None:
    """One session after new/close/resume; ``get --transcript`` adds its latest turns."""
    print_line(f"{session['id']} {session['name']} ({session['status']}, {session['platform']})")
    print_line(f"workdir: {session['workdir']}")
    print_line(f"transcript: {session['transcript_path']}")
    if "turns" not in session:
        return
    print_line(f"turns: the last {len(session['turns'])} of {session['turns_total']}")
    for turn in session["turns"]:
        source = turn.get("provenance", {}).get("source", "?")
        print_line(f"--- {turn.get('at', '')} · {source} · {turn.get('status', '')}")
        print_block(turn.get("prompt") or "")
        if turn.get("reply"):
            print_line("reply:")
            print_block(turn["reply"])
        if turn.get("error"):
            print_line(f"error: {turn['error']}")


def show_message(message: dict[str, Any]) -> None:
    """One message after send, with its delivery state."""
    print_line(f"{message['id']} for {message['session_id']}: {message['status']}")
    if message["delivery"]["reply"]:
        print_block(message["delivery"]["reply"])
    if message.get("error"):
        print_line(f"error: {message['error']}")
    if message.get("warning"):
        print_line(f"warning: {message['warning']}")


def show_messages(result: dict[str, Any]) -> None:
    """``session recall``: undelivered prompts with where they were going and why not."""
    rows = [
        (
            m["id"],
            m["session_id"] or m["provenance"]["target_name"],
            m["provenance"]["source"],
            m["status"],
            m["error"],
            m["prompt"],
        )
        for m in result["messages"]
    ]
    print_table("undelivered messages", ("id", "target", "source", "status", "why", "prompt"), rows)


def show_conversations(result: dict[str, Any]) -> None:
    """``session conversations``: the harness's own list, with the Canopy session if any."""
    rows = [
        (c["conversation_id"], c["updated_at"], c["session_id"] or "", c["title"])
        for c in result["conversations"]
    ]
    print_table(
        f"{result['platform']} conversations in {result['workdir']}",
        ("conversation", "updated", "canopy session", "first prompt"),
        rows,
    )


def show_notifications(result: dict[str, Any]) -> None:
    """``canopy notifications``: newest first."""
    rows = [(n["created_at"], n["kind"], n["text"]) for n in result["notifications"]]
    print_table("notifications", ("when", "kind", "what"), rows)
