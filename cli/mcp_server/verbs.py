"""What each MCP tool action does: one :class:`Verb` row per action, in one table per tool.

A row names the operation the action calls (the one the mirrored CLI command calls), the
arguments it needs and takes, and the JSON type of its answer. The dispatcher checks a
call against the row, and the tool descriptions and output schemas are generated from the
rows, so what an agent reads cannot drift from what the server accepts.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from canopy.errors import Refused
from canopy.ops import control, graphs, notifications, projects, queues, runs, schedules, specs
from canopy.ops import sessions as session_ops
from canopy.ops.logs import DEFAULT_TAIL_LINES, log_tail
from canopy.ops.transcripts import session_transcript
from canopy.ops.usage import usage_report
from canopy.store.engine import Store

Args = dict[str, Any]
"""A tool call's arguments by parameter name, ``action`` included."""

Call = Callable[[Store, Args], Any]
"""An action's body: the operation's result, or an awaitable of it for the async ones."""


@dataclass(frozen=True)
class Verb:
    """One action of a tool: what it does, the operation it calls, and its arguments.

    ``needs`` must be given and ``takes`` may be; any other argument is refused, so an
    agent that mixes up two actions hears about it instead of having it silently ignored.
    """

    doc: str
    call: Call
    needs: tuple[str, ...] = ()
    takes: tuple[str, ...] = ()
    returns: Literal["object", "array"] = "object"
    """The JSON type of the answer (the tool's output schema lists its actions' types)."""


Verbs = Mapping[str, Verb]
"""A tool's actions by name, in the order its description lists them."""


def _doctor(store: Store) -> dict[str, Any]:
    """``doctor``: the report ``canopy doctor --json`` prints (imported when asked: it
    runs the CLIs, which no other action does)."""
    from canopy.ops.doctor import doctor

    return doctor(store).as_json()


async def _resume(store: Store, args: Args) -> Any:
    """``resume``: reopen, then hand over anything still queued (``canopy session resume``)."""
    from canopy.ops.session_wake import resume_session

    return await resume_session(
        store, args["session_id"], args["conversation_id"], args["platform"], args["workdir"]
    )


async def _send(store: Store, args: Args) -> Any:
    """``send``: queue the prompt and hand it to the daemon (``canopy session send``)."""
    from canopy.ops.session_wake import send_message

    return await send_message(store, args["session_id"], args["prompt"])


def _one_group(args: Args) -> str | None:
    """``set_group``'s label: exactly one of ``group`` and ``clear_group`` (``None``)."""
    if (args["group"] is None) == (not args["clear_group"]):
        raise Refused("queue: action 'set_group' needs exactly one of group or clear_group")
    return None if args["clear_group"] else args["group"]


SPEC_VERBS: Verbs = {
    "list": Verb(
        "Specs oldest first (short objects), filtered by workdir tag, status, "
        "standalone and name; the first limit of them.",
        lambda store, a: specs.spec_list(
            store, a["workdir"], a["status"], a["standalone"], a["contains"], a["limit"]
        ),
        takes=("workdir", "status", "standalone", "contains", "limit"),
        returns="array",
    ),
    "count": Verb(
        "How many specs list would give with the same filters: {count}.",
        lambda store, a: specs.spec_count(
            store, a["workdir"], a["status"], a["standalone"], a["contains"]
        ),
        takes=("workdir", "status", "standalone", "contains"),
    ),
    "get": Verb(
        "One spec: body, parsed sections, bound graphs, queues.",
        lambda store, a: specs.spec_get(store, a["spec_id"]),
        needs=("spec_id",),
    ),
    "section": Verb(
        "One canonical section of the body, as markdown.",
        lambda store, a: specs.spec_section(store, a["spec_id"], a["section"]),
        needs=("spec_id", "section"),
    ),
}


SPEC_EDIT_VERBS: Verbs = {
    "create": Verb(
        "A new standalone, pending spec.",
        lambda store, a: specs.spec_create(store, a["name"], a["body"], a["workdir"]),
        needs=("name", "body"),
        takes=("workdir",),
    ),
    "update": Verb(
        "Replace the name, body and/or workdir tag; what is not given is kept.",
        lambda store, a: specs.spec_update(
            store, a["spec_id"], a["name"], a["body"], a["workdir"], a["clear_workdir"]
        ),
        needs=("spec_id",),
        takes=("name", "body", "workdir", "clear_workdir"),
    ),
    "delete": Verb(
        "Delete an unbound spec; it leaves every queue it was in.",
        lambda store, a: specs.spec_delete(store, a["spec_id"]),
        needs=("spec_id",),
    ),
    "set_status": Verb(
        "Admin transition of a standalone spec: complete, skip or reopen.",
        lambda store, a: specs.spec_set_status(store, a["spec_id"], a["status_action"]),
        needs=("spec_id", "status_action"),
    ),
}


QUEUE_VERBS: Verbs = {
    "create": Verb(
        "An empty queue.",
        lambda store, a: queues.queue_create(store, a["name"]),
        needs=("name",),
    ),
    "add_spec": Verb(
        "Add a spec at the end, or with group right after the group's last pending member.",
        lambda store, a: queues.queue_add_spec(store, a["queue_id"], a["spec_id"], a["group"]),
        needs=("queue_id", "spec_id"),
        takes=("group",),
    ),
    "list": Verb(
        "One queue's members in order, or without queue_id every queue with counts.",
        lambda store, a: queues.queue_list(store, a["queue_id"]),
        takes=("queue_id",),
    ),
    "remove_spec": Verb(
        "Take a spec out of the queue (it stays in the backlog).",
        lambda store, a: queues.queue_remove_spec(store, a["queue_id"], a["spec_id"]),
        needs=("queue_id", "spec_id"),
    ),
    "reorder": Verb(
        "Replace the whole order; refused if it misses a member or splits a group.",
        lambda store, a: queues.queue_reorder(store, a["queue_id"], a["order"]),
        needs=("queue_id", "order"),
    ),
    "set_group": Verb(
        "Set a member's group (it moves next to the group) or clear it: exactly one "
        "of group and clear_group.",
        lambda store, a: queues.queue_set_group(store, a["queue_id"], a["spec_id"], _one_group(a)),
        needs=("queue_id", "spec_id"),
        takes=("group", "clear_group"),
    ),
}


GRAPH_VERBS: Verbs = {
    "get": Verb(
        "One graph (= `canopy graph info --json`): definition, bound specs, runs, "
        "node runs, hook runs, queue progress, blocker, consistency_warning.",
        lambda store, a: graphs.graph_get_async(store, a["graph_id"]),
        needs=("graph_id",),
    ),
    "list": Verb(
        "Every graph, oldest first, with status, blocker, counts and active run.",
        lambda store, a: graphs.graph_list(store),
        returns="array",
    ),
    "usage": Verb(
        "Tokens and cost the harnesses reported (= `canopy usage --json`), summed by "
        "platform and model, with the total; of one graph_id's runs, and since a "
        "duration, when given.",
        lambda store, a: usage_report(store, a["since"], a["graph_id"]),
        takes=("graph_id", "since"),
    ),
    "logs": Verb(
        "What the latest run's node runs printed, rendered (= `canopy graph logs "
        "--json`, one record per node run, under node_runs), only the last limit lines "
        "of all (default 200; lines_omitted counts the rest); of one spec_id or node, and "
        "as stored with raw.",
        lambda store, a: log_tail(
            store,
            a["graph_id"],
            spec=a["spec_id"],
            node=a["node"],
            raw=a["raw"],
            limit=DEFAULT_TAIL_LINES if a["limit"] is None else a["limit"],
        ),
        needs=("graph_id",),
        takes=("spec_id", "node", "limit", "raw"),
    ),
    "schedules": Verb(
        "Schedules (= `canopy schedule list --json`), oldest first, of one graph_id or "
        "all: cron, timezone, queue, paused and next_fire (asked of Temporal; temporal "
        "says why when it could not be), and the latest fire: last_fired_at, "
        "last_outcome (started, skipped or refused), last_line, last_run_id.",
        lambda store, a: schedules.schedule_list(store, a["graph_id"]),
        takes=("graph_id",),
        returns="array",
    ),
}


GRAPH_EDIT_VERBS: Verbs = {
    "create": Verb(
        "A new idle graph from a whole definition, binding the specs it lists.",
        lambda store, a: graphs.graph_create(store, a["definition"]),
        needs=("definition",),
    ),
    "update": Verb(
        "Replace the fields the definition names and keep the rest; while a run is "
        "active, a hooks edit also answers remaining_events and hooks_note.",
        lambda store, a: graphs.graph_edit(store, a["graph_id"], a["definition"]),
        needs=("graph_id", "definition"),
    ),
    "delete": Verb(
        "Delete a graph, its run record and its schedules (in Temporal too: refused "
        "while Temporal is unreachable if it has any); its bound specs become standalone.",
        lambda store, a: schedules.graph_delete(store, a["graph_id"]),
        needs=("graph_id",),
    ),
}


GRAPH_CONTROL_VERBS: Verbs = {
    "run": Verb(
        "Start a run over the graph's bound specs, or the pending members of "
        "queue_id, on host; refused if the workdir is not a clean git work tree or "
        "no worker serves the host.",
        lambda store, a: runs.graph_run(
            store, a["graph_id"], a["queue_id"], a["workdir"], a["host"], a["lanes"]
        ),
        needs=("graph_id",),
        takes=("queue_id", "workdir", "host", "lanes"),
    ),
    "continue": Verb(
        "Resume a paused graph: recheck the tree, run_from_node (node, spec_id) or skip_next_spec.",
        lambda store, a: control.graph_continue(
            store, a["graph_id"], a["mode"] or "recheck", a["node"], a["spec_id"]
        ),
        needs=("graph_id",),
        takes=("mode", "node", "spec_id"),
    ),
    "pause": Verb(
        "Pause a running graph at the next spec boundary.",
        lambda store, a: control.graph_pause(store, a["graph_id"]),
        needs=("graph_id",),
    ),
    "stop": Verb(
        "Kill the node in flight, mark its spec interrupted and pause.",
        lambda store, a: control.graph_stop(store, a["graph_id"]),
        needs=("graph_id",),
    ),
    "reset": Verb(
        "Back to idle: end the run, clear the blocker, reopen bound specs.",
        lambda store, a: control.graph_reset(store, a["graph_id"]),
        needs=("graph_id",),
    ),
    "schedule": Verb(
        "Start runs of the graph on cron (5 fields or @daily…) in timezone (IANA, "
        "default UTC), over queue_id or its bound specs: a Temporal Schedule (= `canopy "
        "graph schedule`); a fire while the graph has an active run is skipped and recorded.",
        lambda store, a: schedules.schedule_create(
            store, a["graph_id"], a["cron"], a["queue_id"], a["timezone"]
        ),
        needs=("graph_id", "cron"),
        takes=("queue_id", "timezone"),
    ),
    "pause_schedule": Verb(
        "Pause a schedule: no fire until it is unpaused.",
        lambda store, a: schedules.schedule_pause(store, a["schedule_id"]),
        needs=("schedule_id",),
    ),
    "unpause_schedule": Verb(
        "Unpause a schedule: it fires on its cron again.",
        lambda store, a: schedules.schedule_unpause(store, a["schedule_id"]),
        needs=("schedule_id",),
    ),
    "delete_schedule": Verb(
        "Delete a schedule, in Temporal and in the store.",
        lambda store, a: schedules.schedule_delete(store, a["schedule_id"]),
        needs=("schedule_id",),
    ),
}


SESSION_LIST_VERBS: Verbs = {
    "list": Verb(
        "Sessions oldest first: id, name, status, platform, workdir, harness "
        "conversation id, transcript path, queued message count.",
        lambda store, a: session_ops.session_list(store, a["include_finished"]),
        takes=("include_finished",),
    ),
}


SESSION_VERBS: Verbs = {
    "get": Verb(
        "One session, live or finished; with transcript, also its latest turns "
        "(turns, turns_total).",
        lambda store, a: (
            session_transcript(store, a["session_id"])
            if a["transcript"]
            else session_ops.session_get(store, a["session_id"])
        ),
        needs=("session_id",),
        takes=("transcript",),
    ),
    "new": Verb(
        "Open a live session (its harness conversation starts with the first message).",
        lambda store, a: session_ops.session_new(
            store, a["platform"], a["name"], a["workdir"], a["permissions"]
        ),
        needs=("platform",),
        takes=("name", "workdir", "permissions"),
    ),
    "send": Verb(
        "Queue a prompt for a live session; answers the message (status queued).",
        _send,
        needs=("session_id", "prompt"),
    ),
    "message": Verb(
        "One message: status, provenance and delivery record with the reply; poll it "
        "after send to follow the delivery.",
        lambda store, a: session_ops.message_get(store, a["message_id"]),
        needs=("message_id",),
    ),
    "close": Verb(
        "Finish a live session; later messages for it become recallable.",
        lambda store, a: session_ops.session_close(store, a["session_id"]),
        needs=("session_id",),
    ),
    "resume": Verb(
        "Relaunch a finished session (same id; same name unless a live session holds "
        "it), or with conversation_id + platform a harness conversation.",
        _resume,
        takes=("session_id", "conversation_id", "platform", "workdir"),
    ),
    "recall": Verb(
        "Messages that could not be delivered, with their prompts (all, or one session's).",
        lambda store, a: session_ops.session_recall(store, a["session_id"]),
        takes=("session_id",),
    ),
    "conversations": Verb(
        "The harness's own conversations in a workdir, with their Canopy session.",
        lambda store, a: session_ops.harness_conversations(store, a["platform"], a["workdir"]),
        needs=("platform",),
        takes=("workdir",),
    ),
    "notifications": Verb(
        "What went wrong while nobody watched (= `canopy notifications`): messages "
        "whose session was gone, deliveries that failed; newest first.",
        lambda store, a: notifications.notifications_list(
            store, notifications.DEFAULT_LIMIT if a["limit"] is None else a["limit"]
        ),
        takes=("limit",),
    ),
}


PROJECT_VERBS: Verbs = {
    "list": Verb(
        "The workdirs, sorted.",
        lambda store, a: projects.project_list(store),
        returns="array",
    ),
}


SERVER_VERBS: Verbs = {
    "check": Verb(
        "serving, and when not, problem: Temporal unreachable, or no worker polls "
        "Canopy's task queue (start one with `canopy up`).",
        lambda store, a: control.daemon_check(),
    ),
    "doctor": Verb(
        "The agent CLIs in use checked (= `canopy doctor --json`): installed, "
        "version, argv per permission level, sign-in; ok false when something would "
        "stop a run, each problem one line with its fix; retired_runs: how to finish "
        "runs of the retired workflow type still open on the server.",
        lambda store, a: _doctor(store),
    ),
}
