"""``canopy session …`` and ``canopy notifications``: interactive sessions.

The session operations (the platforms) are imported when a command runs, not
when ``canopy session`` is built for its help.
"""

from typing import Annotated

import typer

from canopy.cli import session_views as views
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit
from canopy.cli.store import open_store
from canopy.ops import notifications

app = typer.Typer(no_args_is_help=True)

SessionRef = Annotated[str, typer.Argument(help="Session id, id prefix or name.")]
Platform = Annotated[str, typer.Option("--platform", help="Harness platform (claude, codex…).")]
Workdir = Annotated[
    str | None, typer.Option("--workdir", help="Working directory (default: the current one).")
]


@app.command("list")
def list_sessions(
    include_finished: Annotated[
        bool, typer.Option("--all", help="Include finished sessions.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """List live sessions (the set name-targeted hooks resolve against), or --all."""
    from canopy.ops import sessions as ops

    result = ops.session_list(open_store(), include_finished)
    emit(result, as_json, lambda: views.show_sessions(result))


@app.command("get")
def get(
    session: SessionRef,
    transcript: Annotated[
        bool, typer.Option("--transcript", help="With the latest turns of its transcript.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show one session, live or finished."""
    from canopy.ops import sessions as ops

    if transcript:
        from canopy.ops.transcripts import session_transcript

        result = session_transcript(open_store(), session)
    else:
        result = ops.session_get(open_store(), session)
    emit(result, as_json, lambda: views.show_session(result))


@app.command("new")
def new(
    platform: Platform,
    name: Annotated[
        str | None, typer.Option("--name", help="Session name (default: generated).")
    ] = None,
    workdir: Workdir = None,
    permissions: Annotated[
        str | None,
        typer.Option(
            "--permissions",
            help="What its turns may do: workspace, full, read-only or cli "
            "(default: the platform's level in config.toml, else workspace).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Open a live session; its harness conversation starts with the first message."""
    from canopy.ops import sessions as ops

    result = ops.session_new(
        open_store(), platform, name=name, workdir=workdir, permissions=permissions
    )
    emit(result, as_json, lambda: views.show_session(result))


@app.command("send")
def send(
    session: SessionRef,
    prompt: Annotated[str, typer.Argument(help="The prompt to deliver.")],
    wait: Annotated[
        float | None,
        typer.Option("--wait", help="Wait up to S seconds for the delivery to finish."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Queue a prompt for a live session; the daemon delivers it as the session's next turn."""
    from canopy.cli import sending

    store = open_store()  # each operation on it commits its own transaction
    sending.deliver(store, sending.store_message(store, session, prompt, wait), wait, as_json)


@app.command("message")
def message(
    message_id: Annotated[str, typer.Argument(help="The message id (msg-…).")],
    as_json: JsonFlag = False,
) -> None:
    """Show one message: its prompt, provenance, status and delivery record (with the reply)."""
    from canopy.ops import sessions as ops

    result = ops.message_get(open_store(), message_id)
    emit(result, as_json, lambda: views.show_message(result))


@app.command("close")
def close(session: SessionRef, as_json: JsonFlag = False) -> None:
    """Finish a live session (it can be resumed later under the same id)."""
    from canopy.ops import sessions as ops

    result = ops.session_close(open_store(), session)
    emit(result, as_json, lambda: views.show_session(result))


@app.command("resume")
def resume(
    session: Annotated[
        str | None, typer.Argument(help="A finished session's id, id prefix or name.")
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--harness-conversation", help="Resume this conversation from the harness's own list."
        ),
    ] = None,
    platform: Annotated[
        str | None, typer.Option("--platform", help="The conversation's platform.")
    ] = None,
    workdir: Workdir = None,
    as_json: JsonFlag = False,
) -> None:
    """Relaunch a finished session (same id), or a harness conversation by its own id."""
    from canopy.cli import sending
    from canopy.ops import sessions as ops

    resumed = ops.session_resume_either(open_store(), session, conversation, platform, workdir)
    sending.wake_resumed(resumed, as_json)


@app.command("conversations")
def conversations(platform: Platform, workdir: Workdir = None, as_json: JsonFlag = False) -> None:
    """List the harness's own conversations in a workdir, with their Canopy session if any."""
    from canopy.ops import sessions as ops

    result = ops.harness_conversations(open_store(), platform, workdir)
    emit(result, as_json, lambda: views.show_conversations(result))


@app.command("recall")
def recall(
    session: Annotated[str | None, typer.Argument(help="Only this session's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show the messages that could not be delivered, with their full prompts."""
    from canopy.ops import sessions as ops

    result = ops.session_recall(open_store(), session)
    emit(result, as_json, lambda: views.show_messages(result))


def notifications_command(
    limit: Annotated[
        int, typer.Option("--limit", help="How many, newest first.")
    ] = notifications.DEFAULT_LIMIT,
    as_json: JsonFlag = False,
) -> None:
    """What went wrong while nobody watched: undeliverable messages, failed deliveries."""
    result = notifications.notifications_list(open_store(), limit)
    emit(result, as_json, lambda: views.show_notifications(result))
