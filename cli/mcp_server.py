"""The MCP server: Canopy's operations as tools for AI agents (DESIGN §9, docs/mcp.md).

Ten tools, each with an ``action`` argument that selects the verb and flat, typed
arguments: ``spec``, ``spec_edit``, ``queue``, ``graph``, ``graph_edit``,
``graph_control``, ``session_list``, ``session``, ``project`` and ``server``. Every
action calls the same operation as the CLI command it mirrors, so an agent gets the same
validation and the same answers as a person: a result is the JSON ``canopy … --json``
prints (as text, and as ``structuredContent`` under ``result``), and a
:class:`~canopy.errors.Refused` comes back as a tool error carrying the CLI's one-line
message (without its ``error: `` prefix). :class:`CanopyMCP` holds the rest to the
letter of the protocol.

Each tool's actions are a table of :class:`Verb` rows. One dispatcher checks the arguments
against the row, calls the operation and maps its answer, so the tools themselves are
only signatures; the tool descriptions are generated from the same tables, so they cannot
drift from what the dispatcher accepts.

Stdio is the only transport: the server opens no network port.
"""

import inspect
import json
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field, ValidationError

from canopy.backlog.specformat import SECTION_NAMES
from canopy.contracts.graph_run_signals import CONTINUE_MODES
from canopy.errors import Refused, debug_requested, unexpected_error_line
from canopy.limits import text_problem
from canopy.ops import control, graphs, notifications, projects, queues, runs, specs
from canopy.ops import sessions as session_ops
from canopy.ops.transcripts import session_transcript
from canopy.ops.usage import usage_report
from canopy.permissions import PERMISSION_LEVELS
from canopy.statuses import SET_STATUS_ACTIONS, SPEC_STATUSES
from canopy.store.engine import Store, open_store
from canopy.version import canopy_version

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


@dataclass(frozen=True)
class ToolDef:
    """One MCP tool: its name, what it is for, its actions and its signature.

    ``read_only`` becomes the MCP read-only hint, so hosts can let an agent read without
    asking while still confirming the tools that write or start runs.
    """

    name: str
    summary: str
    verbs: Mapping[str, Verb]
    fn: Callable[..., Awaitable[CallToolResult]]
    read_only: bool = False


# --------------------------------------------------------------------------- arguments

ID_PREFIX = "full id or any unique prefix, with or without the kind"

SpecId = Annotated[str | None, Field(description=f"A spec: {ID_PREFIX} ('spec-8t9', '8t9').")]
QueueId = Annotated[
    str | None, Field(description=f"A queue: its exact name, or its {ID_PREFIX} ('queue-…').")
]
GraphId = Annotated[
    str | None, Field(description=f"A graph: its exact name, or its {ID_PREFIX} ('graph-…').")
]
Name = Annotated[str | None, Field(description="A one-line name, not empty.")]
Body = Annotated[
    str | None,
    Field(
        description="The spec body in the tagged format: each of "
        + ", ".join(f"<{name}>" for name in SECTION_NAMES)
        + " exactly once, markdown inside (docs/specs.md)."
    ),
]
Group = Annotated[
    str | None,
    Field(description="Context group label: grouped specs stay together in the queue."),
]
ClearWorkdir = Annotated[
    bool, Field(description="update: remove the workdir tag (instead of giving workdir).")
]
ClearGroup = Annotated[
    bool, Field(description="set_group: clear the member's group (instead of giving group).")
]
Definition = Annotated[
    dict[str, Any] | None,
    Field(
        description="The graph definition as a JSON object (docs/graphs.md): the whole "
        "definition for create; for update only the fields to replace (nodes, specs, "
        "ensembles, name, workdir, host, allow_dirty_start, hooks — each event named replaces "
        "that event's list — or the legacy top-level on_completed hook)."
    ),
]


WORKDIR_NOTE = "(made absolute against the server's directory; '~' is expanded)"
ListWorkdir = Annotated[
    str | None, Field(description=f"list: only specs tagged to this workdir {WORKDIR_NOTE}.")
]
TagWorkdir = Annotated[
    str | None, Field(description=f"Tag the spec to this workdir {WORKDIR_NOTE}.")
]
RunWorkdir = Annotated[
    str | None,
    Field(description=f"run: run in this workdir instead of the graph's {WORKDIR_NOTE}."),
]
RunHost = Annotated[
    str | None,
    Field(
        description="run: the machine holding the workdir, whose worker runs the nodes (its "
        "CANOPY_HOST; default: the graph's host, else the MCP server's host)."
    ),
]


VERB = "The action: what to do. The tool description lists each action's arguments."
SpecAction = Annotated[Literal["list", "count", "get", "section"], Field(description=VERB)]
SpecEditAction = Annotated[
    Literal["create", "update", "delete", "set_status"], Field(description=VERB)
]
QueueAction = Annotated[
    Literal["create", "add_spec", "list", "remove_spec", "reorder", "set_group"],
    Field(description=VERB),
]
GraphAction = Annotated[Literal["get", "list", "usage"], Field(description=VERB)]
GraphEditAction = Annotated[Literal["create", "update", "delete"], Field(description=VERB)]
GraphControlAction = Annotated[
    Literal["run", "continue", "pause", "stop", "reset"], Field(description=VERB)
]
SessionListAction = Annotated[Literal["list"], Field(description=VERB)]
ProjectAction = Annotated[Literal["list"], Field(description=VERB)]
ServerAction = Annotated[Literal["check", "doctor"], Field(description=VERB)]
SessionAction = Annotated[
    Literal[
        "get",
        "new",
        "send",
        "message",
        "close",
        "resume",
        "recall",
        "conversations",
        "notifications",
    ],
    Field(description=VERB),
]
SessionId = Annotated[
    str | None,
    Field(
        description=f"A session: its exact id, its {ID_PREFIX} ('sess-…'), or its name "
        "when exactly one candidate session has it."
    ),
]
PlatformName = Annotated[
    str | None, Field(description="new, resume, conversations: the harness platform (claude…).")
]
SessionWorkdir = Annotated[
    str | None,
    Field(description=f"new, resume, conversations: the working directory {WORKDIR_NOTE}."),
]


# --------------------------------------------------------------------------- tools


async def spec_tool(
    action: SpecAction,
    workdir: ListWorkdir = None,
    status: Annotated[
        str | None,
        Field(description=f"list: only specs with this status: {', '.join(SPEC_STATUSES)}."),
    ] = None,
    spec_id: SpecId = None,
    section: Annotated[
        str | None,
        Field(description=f"section: which one: {', '.join(SECTION_NAMES)}."),
    ] = None,
    standalone: Annotated[
        bool, Field(description="list, count: only standalone specs (bound to no graph).")
    ] = False,
    contains: Annotated[
        str | None, Field(description="list, count: only specs whose name contains this text.")
    ] = None,
    limit: Annotated[int | None, Field(description="list: only the first N specs.")] = None,
) -> CallToolResult:
    """Read the spec backlog."""
    return await _dispatch("spec", locals())


async def spec_edit_tool(
    action: SpecEditAction,
    spec_id: SpecId = None,
    name: Name = None,
    body: Body = None,
    workdir: TagWorkdir = None,
    clear_workdir: ClearWorkdir = False,
    status_action: Annotated[
        str | None,
        Field(description=f"set_status: one of {', '.join(SET_STATUS_ACTIONS)}."),
    ] = None,
) -> CallToolResult:
    """Write the spec backlog."""
    return await _dispatch("spec_edit", locals())


async def queue_tool(
    action: QueueAction,
    queue_id: QueueId = None,
    name: Name = None,
    spec_id: SpecId = None,
    group: Group = None,
    clear_group: ClearGroup = False,
    order: Annotated[
        list[str] | None,
        Field(description="reorder: every current member (spec id or prefix), in the new order."),
    ] = None,
) -> CallToolResult:
    """Queues: ordered lists of existing specs that a graph run drains."""
    return await _dispatch("queue", locals())


async def graph_tool(
    action: GraphAction,
    graph_id: GraphId = None,
    since: Annotated[
        str | None,
        Field(description="usage: only runs that ended this recently: 24h, 7d, 30m, 2w."),
    ] = None,
) -> CallToolResult:
    """Read graphs, their run record and what their runs used."""
    return await _dispatch("graph", locals())


async def graph_edit_tool(
    action: GraphEditAction, graph_id: GraphId = None, definition: Definition = None
) -> CallToolResult:
    """Define graphs: pipelines of agent and command nodes."""
    return await _dispatch("graph_edit", locals())


async def graph_control_tool(
    action: GraphControlAction,
    graph_id: GraphId = None,
    queue_id: QueueId = None,
    workdir: RunWorkdir = None,
    host: RunHost = None,
    mode: Annotated[
        str | None,
        Field(description=f"continue: one of {', '.join(CONTINUE_MODES)} (default recheck)."),
    ] = None,
    node: Annotated[
        str | None,
        Field(
            description="continue with run_from_node: the node to start at (default: the first)."
        ),
    ] = None,
    spec_id: SpecId = None,
) -> CallToolResult:
    """Start and steer graph runs on Temporal (needs `canopy up`)."""
    return await _dispatch("graph_control", locals())


async def session_list_tool(
    action: SessionListAction,
    include_finished: Annotated[
        bool, Field(description="Also list finished (closed) sessions.")
    ] = False,
) -> CallToolResult:
    """The live interactive sessions: the set name-targeted hooks resolve against."""
    return await _dispatch("session_list", locals())


async def session_tool(
    action: SessionAction,
    session_id: SessionId = None,
    prompt: Annotated[str | None, Field(description="send: the prompt to deliver.")] = None,
    message_id: Annotated[
        str | None, Field(description="message: the message id (msg-…) send answered with.")
    ] = None,
    name: Name = None,
    platform: PlatformName = None,
    workdir: SessionWorkdir = None,
    permissions: Annotated[
        str | None,
        Field(
            description="new: what its turns may do (default: the platform's level, "
            "else workspace)."
        ),
    ] = None,
    conversation_id: Annotated[
        str | None,
        Field(description="resume: a conversation id from the harness's own list."),
    ] = None,
    limit: Annotated[
        int | None, Field(description="notifications: how many, newest first (default 50).")
    ] = None,
    transcript: Annotated[
        bool, Field(description="get: with the latest turns of its transcript.")
    ] = False,
) -> CallToolResult:
    """Interactive sessions: open, message, close, resume, recall undelivered prompts."""
    return await _dispatch("session", locals())


async def project_tool(action: ProjectAction) -> CallToolResult:
    """The projects: workdirs the store knows."""
    return await _dispatch("project", locals())


async def server_tool(action: ServerAction) -> CallToolResult:
    """Whether a daemon serves runs and messages."""
    return await _dispatch("server", locals())


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


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        "spec",
        "Read the spec backlog: list or count specs, read one, or extract one section of its body.",
        {
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
        },
        spec_tool,
        read_only=True,
    ),
    ToolDef(
        "spec_edit",
        "Write the spec backlog. Bodies must be in the tagged format; a body that does not "
        "parse is refused naming the tag, and nothing is written.",
        {
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
        },
        spec_edit_tool,
    ),
    ToolDef(
        "queue",
        "Queues: ordered lists of existing specs, drained by graph_control run with "
        "queue_id. Members of one context group stay together and share a warm agent "
        "session. Each action answers with the queue and its members in order (list without "
        "queue_id: every queue with counts).",
        {
            "create": Verb(
                "An empty queue.",
                lambda store, a: queues.queue_create(store, a["name"]),
                needs=("name",),
            ),
            "add_spec": Verb(
                "Add a spec at the end, or with group right after the group's last pending member.",
                lambda store, a: queues.queue_add_spec(
                    store, a["queue_id"], a["spec_id"], a["group"]
                ),
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
                lambda store, a: queues.queue_set_group(
                    store, a["queue_id"], a["spec_id"], _one_group(a)
                ),
                needs=("queue_id", "spec_id"),
                takes=("group", "clear_group"),
            ),
        },
        queue_tool,
    ),
    ToolDef(
        "graph",
        "Read graphs: pipelines of agent and command nodes that runs take specs through.",
        {
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
        },
        graph_tool,
        read_only=True,
    ),
    ToolDef(
        "graph_edit",
        "Define graphs. A definition is validated whole before anything is written; edits "
        "are allowed during a run and take effect at the next node launch.",
        {
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
                "Delete a graph and its run record; its bound specs become standalone.",
                lambda store, a: graphs.graph_delete(store, a["graph_id"]),
                needs=("graph_id",),
            ),
        },
        graph_edit_tool,
    ),
    ToolDef(
        "graph_control",
        "Start and steer graph runs (one Temporal workflow per run; needs `canopy up`). "
        "continue, pause, stop and reset signal the run and wait up to 5 s for the store "
        "to show the effect; `note` says why when it has not shown yet.",
        {
            "run": Verb(
                "Start a run over the graph's bound specs, or the pending members of "
                "queue_id, on host; refused if the workdir is not a clean git work tree or "
                "no worker serves the host.",
                lambda store, a: runs.graph_run(
                    store, a["graph_id"], a["queue_id"], a["workdir"], a["host"]
                ),
                needs=("graph_id",),
                takes=("queue_id", "workdir", "host"),
            ),
            "continue": Verb(
                "Resume a paused graph: recheck the tree, run_from_node (node, spec_id) or "
                "skip_next_spec.",
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
        },
        graph_control_tool,
    ),
    ToolDef(
        "session_list",
        "The interactive sessions Canopy tracks (= `canopy session list --json`): live ones "
        "by default — exactly the set a name-targeted interactive hook resolves against.",
        {
            "list": Verb(
                "Sessions oldest first: id, name, status, platform, workdir, harness "
                "conversation id, transcript path, queued message count.",
                lambda store, a: session_ops.session_list(store, a["include_finished"]),
                takes=("include_finished",),
            ),
        },
        session_list_tool,
        read_only=True,
    ),
    ToolDef(
        "session",
        "Interactive sessions: harness conversations the daemon drives turn by turn. A "
        "sent prompt is queued and delivered in order as the session's next turn.",
        {
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
                lambda store, a: session_ops.harness_conversations(
                    store, a["platform"], a["workdir"]
                ),
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
        },
        session_tool,
    ),
    ToolDef(
        "project",
        "Projects: every workdir a spec is tagged with, a graph runs in or a session works "
        "in (= `canopy project list --json`).",
        {
            "list": Verb(
                "The workdirs, sorted.",
                lambda store, a: projects.project_list(store),
                returns="array",
            ),
        },
        project_tool,
        read_only=True,
    ),
    ToolDef(
        "server",
        "Whether a Canopy daemon serves (= `canopy server check --json`): runs and "
        "messages wait without one; the store tools work either way. And whether the agent "
        "CLIs in use will run (= `canopy doctor --json`).",
        {
            "check": Verb(
                "serving, and when not, problem: Temporal unreachable, or no worker polls "
                "Canopy's task queue (start one with `canopy up`).",
                lambda store, a: control.daemon_check(),
            ),
            "doctor": Verb(
                "The agent CLIs in use checked (= `canopy doctor --json`): installed, "
                "version, argv per permission level, sign-in; ok false when something would "
                "stop a run, each problem one line with its fix.",
                lambda store, a: _doctor(store),
            ),
        },
        server_tool,
        read_only=True,
    ),
)

_BY_NAME = {tool.name: tool for tool in TOOLS}


# --------------------------------------------------------------------------- dispatch


async def _dispatch(tool: str, args: Args) -> CallToolResult:
    """Run ``args["action"]`` of ``tool``: check the arguments, call the operation, answer.

    ``args`` are the tool function's parameters (its ``locals()`` on entry). A refusal,
    ours or the operation's, is an error result with exactly the refusal's line; any other
    exception is one line too (:func:`unexpected_error_line`, the CLI's last resort), so
    an agent never has to read a traceback, and the server keeps serving.
    """
    action = args["action"]
    verb = _BY_NAME[tool].verbs[action]
    try:
        _check_arguments(tool, action, verb, args)
        result = verb.call(open_store(), args)
        if inspect.isawaitable(result):
            result = await result
    except Refused as refusal:
        return _error(refusal.message)
    except Exception as error:
        if debug_requested():
            traceback.print_exc()  # stderr: the host's log for this server, not the agent
        return _error(unexpected_error_line(error))
    # The same serialisation as the CLI's --json (cli.render.print_json), minus the newline;
    # the structured copy is that JSON read back, so the two cannot differ.
    text = json.dumps(result, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"result": json.loads(text)},
    )


def _error(line: str) -> CallToolResult:
    """A tool error carrying one line."""
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _check_arguments(tool: str, action: str, verb: Verb, args: Args) -> None:
    """Refuse a missing required argument, one the action does not use, or text no
    operation could store (a NUL, a lone surrogate: JSON can carry both)."""
    given = [name for name, value in args.items() if name != "action" and _given(value)]
    missing = [name for name in verb.needs if name not in given]
    if missing:
        raise Refused(f"{tool}: action {action!r} needs {', '.join(missing)}")
    extra = [name for name in given if name not in verb.needs + verb.takes]
    if extra:
        raise Refused(f"{tool}: action {action!r} does not take {', '.join(extra)}")
    for name in given:
        values = args[name] if isinstance(args[name], list) else [args[name]]
        for value in values:
            problem = text_problem(value) if isinstance(value, str) else None
            if problem is not None:
                raise Refused(f"{tool}: argument {name}: {problem}")


def _given(value: Any) -> bool:
    """An argument counts as given unless it is absent (``None``) or an unset flag."""
    return value is not None and value is not False


# --------------------------------------------------------------------------- server


class CanopyMCP(MCPServer[Any]):
    """The MCP server with Canopy's tools, held to the letter of the protocol.

    - ``serverInfo.version`` is the package version.
    - Only the tools capability is advertised: the SDK registers prompt and resource
      handlers whether or not anything is behind them, and Canopy has neither; without
      the handlers those methods answer "method not found", as the protocol asks of a
      capability a server does not declare. The tool list never changes, so there is no
      list-changed subscription either.
    - An unknown tool is a JSON-RPC error (-32602, invalid params), not a tool result.
    - Arguments are checked against the published input schema's JSON types before the
      SDK's pydantic model sees them: pydantic would read ``"yes"`` as true and ``true``
      as 1, and parse a string holding JSON into a list or object.
    - Argument errors are one readable line naming the argument: the SDK reports schema
      violations as a multi-line pydantic dump behind ``Error executing tool …``; agents
      act better on the short form the CLI uses, such as
      ``spec: unknown action 'fetch'; one of list, count, get, section``. Arguments the tool
      does not have at all are refused too, rather than ignored.
    """

    def __init__(self, tools: list[Tool]) -> None:
        super().__init__(
            name="canopy",
            version=canopy_version(),
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            tools=tools,
            subscriptions=False,
        )
        self.input_schemas = {tool.name: tool.parameters for tool in tools}
        handlers = self._lowlevel_server._request_handlers  # no public way to drop them
        for method in _UNSERVED_METHODS:
            del handlers[method]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = _BY_NAME.get(name)
        if tool is None:
            known = ", ".join(_BY_NAME)
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}; the tools are {known}")
        _refuse_unknown_arguments(tool, arguments)
        _refuse_wrong_types(tool, arguments, self.input_schemas[name])
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            # Only schema violations are reworded: a crash stays the SDK's generic error.
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(_argument_error(tool, cause)) from cause


_UNSERVED_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
)
"""What the SDK would answer (with empty lists) although Canopy has no prompts or
resources; their handlers are what make it advertise the capabilities."""


def _refuse_unknown_arguments(tool: ToolDef, arguments: Mapping[str, Any]) -> None:
    """Refuse argument names the tool does not have (pydantic would drop them silently)."""
    unknown = sorted(set(arguments) - set(inspect.signature(tool.fn).parameters))
    if unknown:
        raise ToolError(f"{tool.name}: unknown argument {', '.join(unknown)}")


def _refuse_wrong_types(tool: ToolDef, arguments: Mapping[str, Any], schema: Args) -> None:
    """Refuse an argument whose JSON type the input schema does not allow (``null`` where
    a value is needed, ``"yes"`` for a boolean, ``true`` for an integer), naming it."""
    for name, value in arguments.items():
        spec = schema["properties"][name]
        arms = spec.get("anyOf", [spec])
        if any(_json_type_fits(value, arm.get("type")) for arm in arms):
            continue
        choices = next((arm["enum"] for arm in arms if "enum" in arm), None)
        if choices is not None:
            wanted = f"one of {', '.join(choices)}"
        else:
            types = [arm["type"] for arm in arms if arm.get("type") not in (None, "null")]
            wanted = " or ".join(_A_TYPE[json_type] for json_type in types)
        raise ToolError(f"{tool.name}: argument {name} must be {wanted}, not {_shown(value)}")


_A_TYPE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _json_type_fits(value: Any, json_type: str | None) -> bool:
    """Whether ``value`` (as JSON decoded it) is of the JSON Schema type ``json_type``
    (``None``: any). ``true`` is a boolean only; ``2.0`` is an integer, as JSON Schema
    counts integers by value."""
    if json_type is None:
        return True
    if isinstance(value, bool):
        return json_type == "boolean"
    if isinstance(value, int):
        return json_type in ("integer", "number")
    if isinstance(value, float):
        return json_type == "number" or (json_type == "integer" and value.is_integer())
    python_type = _PYTHON_TYPES.get(json_type)
    return python_type is not None and isinstance(value, python_type)


_PYTHON_TYPES: dict[str, type] = {"string": str, "array": list, "object": dict, "null": type(None)}
"""What JSON decodes the other JSON Schema types into."""


def _shown(value: Any) -> str:
    """A wrong value for a refusal: its JSON type, and the value itself if short."""
    if value is None:
        return "null"
    kind = next(name for name in _A_TYPE if name != "null" and _json_type_fits(value, name))
    text = json.dumps(value)
    return f"{_A_TYPE[kind]} ({text})" if len(text) <= 40 else _A_TYPE[kind]


def _argument_error(tool: ToolDef, error: ValidationError) -> str:
    """The first schema violation of a call, as one line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "missing":
        return f"{tool.name}: missing argument {where}"
    if where == "action":
        return f"{tool.name}: unknown action {first['input']!r}; one of {', '.join(tool.verbs)}"
    return f"{tool.name}: argument {where}: {first['msg']}"


def _description(tool: ToolDef) -> str:
    """The tool's description for agents: its purpose, then each action's arguments."""
    lines = [tool.summary, "", "Actions (`action`):"]
    for action, verb in tool.verbs.items():
        wants = [*verb.needs, *(f"[{name}]" for name in verb.takes)]
        lines.append(f"- {action}({', '.join(wants)}): {verb.doc}")
    lines += [
        "",
        "[x] = optional. The result is the JSON `canopy … --json` prints (structured: "
        "under `result`); a refusal is a tool error with the CLI's one-line reason, and "
        "nothing was written.",
    ]
    return "\n".join(lines)


def _choices() -> dict[str, tuple[str, ...]]:
    """The fixed values of the arguments that take one, by argument name: the input
    schema lists them as an enum. The operations still check the value themselves, so a
    value outside the list is refused with the CLI's message (a section name in another
    case is read as the CLI reads it)."""
    from canopy.platforms.registry import platform_names

    return {
        "status": SPEC_STATUSES,
        "status_action": tuple(SET_STATUS_ACTIONS),
        "section": SECTION_NAMES,
        "mode": CONTINUE_MODES,
        "platform": tuple(platform_names()),  # the built-in ones and the config file's
        "permissions": PERMISSION_LEVELS,
    }


def _with_choices(schema: Args, choices: Mapping[str, tuple[str, ...]]) -> Args:
    """``schema`` with each fixed-value argument's string arm an enum of its values."""
    for name, values in choices.items():
        spec = schema["properties"].get(name)
        if spec is None:
            continue
        for arm in spec.get("anyOf", [spec]):
            if arm.get("type") == "string":
                arm["enum"] = list(values)
    return schema


def _output_schema(tool: ToolDef) -> Args:
    """The shape of the tool's results: ``{"result": …}``, the answer the text content
    carries too (MCP wants an object; ``spec list`` answers an array)."""
    kinds = sorted({verb.returns for verb in tool.verbs.values()})
    result = {
        "type": kinds[0] if len(kinds) == 1 else kinds,
        "description": "The JSON `canopy … --json` prints for the same command.",
    }
    return {
        "type": "object",
        "properties": {"result": result},
        "required": ["result"],
        "additionalProperties": False,
    }


def _tool(tool: ToolDef, choices: Mapping[str, tuple[str, ...]]) -> Tool:
    """The SDK's registration of one tool: schemas, description and hints."""
    registered = Tool.from_function(
        tool.fn,
        name=tool.name,
        description=_description(tool),
        annotations=ToolAnnotations(
            read_only_hint=tool.read_only, destructive_hint=not tool.read_only
        ),
    )
    _with_choices(registered.parameters, choices)
    # Read live by the SDK: published in tools/list, while _dispatch fills the content.
    registered.fn_metadata.output_schema = _output_schema(tool)
    return registered


INSTRUCTIONS = (
    "Canopy runs AI coding agents unattended over queues of specs (tagged task "
    "descriptions) through graphs of agent and command nodes, on Temporal. Specs, queues "
    "and graphs answer to their full id or any unique id prefix; queues and graphs also to "
    "their exact name. Results are the JSON the `canopy` CLI prints with --json; a refused "
    "call writes nothing and says why in one line."
)


def build_server() -> CanopyMCP:
    """A server with every Canopy tool registered (no transport attached yet)."""
    choices = _choices()
    return CanopyMCP([_tool(tool, choices) for tool in TOOLS])


def serve() -> None:
    """Serve the tools over stdio until the client closes stdin (``canopy mcp``)."""
    build_server().run("stdio")
