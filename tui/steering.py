"""The TUI's actions: each runs the operation a CLI command runs, the way it runs it
(an async one under its own ``asyncio.run``), on the worker thread that calls it.

The app imports this module on the first action, on that thread: the operations that
talk to Temporal load the SDK, which would double the time to the first paint.
"""

import asyncio
from pathlib import Path
from typing import Any

from canopy.errors import Refused
from canopy.ops import control, graphs, queues, runs, sessions, specs
from canopy.ops.session_wake import resume_session, send_message
from canopy.store.engine import Store


def continue_run(
    store: Store, graph: str, mode: str = "recheck", node: str | None = None
) -> dict[str, Any]:
    """``graph continue GRAPH [--mode MODE] [--node NODE]``."""
    return asyncio.run(control.graph_continue(store, graph, mode, node))


def pause(store: Store, graph: str) -> dict[str, Any]:
    """``graph pause GRAPH``."""
    return asyncio.run(control.graph_pause(store, graph))


def stop(store: Store, graph: str) -> dict[str, Any]:
    """``graph stop GRAPH``."""
    return asyncio.run(control.graph_stop(store, graph))


def reset(store: Store, graph: str) -> dict[str, Any]:
    """``graph reset GRAPH``."""
    return asyncio.run(control.graph_reset(store, graph))


def run(store: Store, graph: str, queue: str | None) -> dict[str, Any]:
    """``graph run GRAPH [--queue QUEUE]``."""
    return asyncio.run(runs.graph_run(store, graph, queue=queue))


def toggle_dirty(store: Store, graph: str) -> dict[str, Any]:
    """``graph edit`` turning ``allow_dirty_start`` over."""
    allowed = graphs.graph_info(store, graph).allow_dirty_start
    graphs.graph_edit(store, graph, {"allow_dirty_start": not allowed})
    return {"status": f"allow_dirty_start {'off' if allowed else 'on'}"}


def send(store: Store, session: str, prompt: str) -> dict[str, Any]:
    """``session send SESSION PROMPT``: recorded with source ``promptbuilder``."""
    return asyncio.run(send_message(store, session, prompt))


def new_session(store: Store, platform: str, workdir: str) -> dict[str, Any]:
    """``session new --platform PLATFORM --workdir WORKDIR`` (a generated name)."""
    return sessions.session_new(store, platform, workdir=workdir)


def resume(
    store: Store,
    session: str | None,
    conversation: str | None,
    platform: str | None,
    workdir: str | None,
) -> dict[str, Any]:
    """``session resume SESSION`` or ``session resume --harness-conversation ID
    --platform PLATFORM --workdir WORKDIR``."""
    return asyncio.run(resume_session(store, session, conversation, platform, workdir))


def save_spec(
    store: Store,
    spec: str | None,
    name: str | None,
    body: str,
    workdir: str | None,
    draft: str,
) -> dict[str, Any]:
    """``spec update SPEC --body-file DRAFT``, or ``spec create --name NAME --body-file
    DRAFT [--workdir WORKDIR]`` when there is no spec yet. The draft is removed once
    saved; a refused body keeps it, and the refusal names it."""
    try:
        if spec is None:
            assert name is not None
            result = specs.spec_create(store, name, body, workdir=workdir)
        else:
            result = specs.spec_update(store, spec, body=body)
    except Refused as refusal:
        raise Refused(f"{refusal} (your text is kept in {draft})") from refusal
    Path(draft).unlink(missing_ok=True)
    return result


def add_to_queue(store: Store, queue: str, spec: str, group: str | None) -> dict[str, Any]:
    """``queue add QUEUE SPEC [--group GROUP]``."""
    return queues.queue_add_spec(store, queue, spec, group)


def remove_from_queue(store: Store, queue: str, spec: str) -> dict[str, Any]:
    """``queue remove QUEUE SPEC``."""
    return queues.queue_remove_spec(store, queue, spec)


def reorder(store: Store, queue: str, order: list[str]) -> dict[str, Any]:
    """``queue reorder QUEUE SPEC…``: refused, changing nothing, if it splits a group."""
    return queues.queue_reorder(store, queue, order)


def set_group(store: Store, queue: str, spec: str, group: str | None) -> dict[str, Any]:
    """``queue group QUEUE SPEC GROUP`` or ``--clear`` (``None``)."""
    return queues.queue_set_group(store, queue, spec, group)
