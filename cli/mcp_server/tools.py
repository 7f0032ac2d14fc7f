"""The ten MCP tools: their signatures and what they are for.

A tool function is only a signature: its parameters, typed with the shared argument
types, are what the SDK turns into the input schema an agent sees, and its body hands the
call to :func:`~canopy.cli.mcp_server.dispatch.dispatch` with the tool's verb table.
:data:`TOOLS` pairs each function with its name, summary and table, in the order
``tools/list`` shows them.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from canopy.backlog.specformat import SECTION_NAMES
from canopy.cli.mcp_server.arguments import (
    Body,
    ClearGroup,
    ClearWorkdir,
    Definition,
    GraphAction,
    GraphControlAction,
    GraphEditAction,
    GraphId,
    Group,
    ListWorkdir,
    Name,
    PlatformName,
    ProjectAction,
    QueueAction,
    QueueId,
    RunHost,
    RunLanes,
    RunWorkdir,
    ScheduleId,
    ServerAction,
    SessionAction,
    SessionId,
    SessionListAction,
    SessionWorkdir,
    SpecAction,
    SpecEditAction,
    SpecId,
    TagWorkdir,
)
from canopy.cli.mcp_server.dispatch import dispatch
from canopy.cli.mcp_server.verbs import (
    GRAPH_CONTROL_VERBS,
    GRAPH_EDIT_VERBS,
    GRAPH_VERBS,
    PROJECT_VERBS,
    QUEUE_VERBS,
    SERVER_VERBS,
    SESSION_LIST_VERBS,
    SESSION_VERBS,
    SPEC_EDIT_VERBS,
    SPEC_VERBS,
    Verbs,
)
from canopy.contracts.graph_run_signals import CONTINUE_MODES
from canopy.statuses import SET_STATUS_ACTIONS, SPEC_STATUSES


@dataclass(frozen=True)
class ToolDef:
    """One MCP tool: its name, what it is for, its actions and its signature.

    ``read_only`` becomes the MCP read-only hint, so hosts can let an agent read without
    asking while still confirming the tools that write or start runs.
    """

    name: str
    summary: str
    verbs: Verbs
    fn: Callable[..., Awaitable[CallToolResult]]
    read_only: bool = False


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
    return await dispatch("spec", SPEC_VERBS, locals())


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
    return await dispatch("spec_edit", SPEC_EDIT_VERBS, locals())


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
    return await dispatch("queue", QUEUE_VERBS, locals())


async def graph_tool(
    action: GraphAction,
    graph_id: GraphId = None,
    since: Annotated[
        str | None,
        Field(description="usage: only runs that ended this recently: 24h, 7d, 30m, 2w."),
    ] = None,
    spec_id: SpecId = None,
    node: Annotated[str | None, Field(description="logs: only this node's runs.")] = None,
    limit: Annotated[
        int | None,
        Field(description="logs: only the last N lines of all (default 200, at most 10000)."),
    ] = None,
    raw: Annotated[
        bool, Field(description="logs: each log's lines as stored instead of rendered.")
    ] = False,
) -> CallToolResult:
    """Read graphs, their run record, what their runs used and what their nodes printed."""
    return await dispatch("graph", GRAPH_VERBS, locals())


async def graph_edit_tool(
    action: GraphEditAction, graph_id: GraphId = None, definition: Definition = None
) -> CallToolResult:
    """Define graphs: pipelines of agent and command nodes."""
    return await dispatch("graph_edit", GRAPH_EDIT_VERBS, locals())


async def graph_control_tool(
    action: GraphControlAction,
    graph_id: GraphId = None,
    queue_id: QueueId = None,
    workdir: RunWorkdir = None,
    host: RunHost = None,
    lanes: RunLanes = None,
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
    cron: Annotated[
        str | None,
        Field(description="schedule: when to start a run: 5 fields ('0 2 * * 1-5') or @daily."),
    ] = None,
    timezone: Annotated[
        str | None,
        Field(description="schedule: the IANA time zone cron is read in (default UTC)."),
    ] = None,
    schedule_id: ScheduleId = None,
) -> CallToolResult:
    """Start and steer graph runs on Temporal (needs `canopy up`), and schedule them."""
    return await dispatch("graph_control", GRAPH_CONTROL_VERBS, locals())


async def session_list_tool(
    action: SessionListAction,
    include_finished: Annotated[
        bool, Field(description="Also list finished (closed) sessions.")
    ] = False,
) -> CallToolResult:
    """The live interactive sessions: the set name-targeted hooks resolve against."""
    return await dispatch("session_list", SESSION_LIST_VERBS, locals())


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
    return await dispatch("session", SESSION_VERBS, locals())


async def project_tool(action: ProjectAction) -> CallToolResult:
    """The projects: workdirs the store knows."""
    return await dispatch("project", PROJECT_VERBS, locals())


async def server_tool(action: ServerAction) -> CallToolResult:
    """Whether a daemon serves runs and messages."""
    return await dispatch("server", SERVER_VERBS, locals())


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        "spec",
        "Read the spec backlog: list or count specs, read one, or extract one section of its body.",
        SPEC_VERBS,
        spec_tool,
        read_only=True,
    ),
    ToolDef(
        "spec_edit",
        "Write the spec backlog. Bodies must be in the tagged format; a body that does not "
        "parse is refused naming the tag, and nothing is written.",
        SPEC_EDIT_VERBS,
        spec_edit_tool,
    ),
    ToolDef(
        "queue",
        "Queues: ordered lists of existing specs, drained by graph_control run with "
        "queue_id. Members of one context group stay together and share a warm agent "
        "session. Each action answers with the queue and its members in order (list without "
        "queue_id: every queue with counts).",
        QUEUE_VERBS,
        queue_tool,
    ),
    ToolDef(
        "graph",
        "Read graphs: pipelines of agent and command nodes that runs take specs through; "
        "what their runs used, and what their node runs printed.",
        GRAPH_VERBS,
        graph_tool,
        read_only=True,
    ),
    ToolDef(
        "graph_edit",
        "Define graphs. A definition is validated whole before anything is written; edits "
        "are allowed during a run and take effect at the next node launch.",
        GRAPH_EDIT_VERBS,
        graph_edit_tool,
    ),
    ToolDef(
        "graph_control",
        "Start and steer graph runs (one Temporal workflow per run; needs `canopy up`). "
        "continue, pause, stop and reset signal the run and wait up to 5 s for the store "
        "to show the effect; `note` says why when it has not shown yet. schedule starts "
        "runs on a cron (a Temporal Schedule; graph schedules lists them).",
        GRAPH_CONTROL_VERBS,
        graph_control_tool,
    ),
    ToolDef(
        "session_list",
        "The interactive sessions Canopy tracks (= `canopy session list --json`): live ones "
        "by default — exactly the set a name-targeted interactive hook resolves against.",
        SESSION_LIST_VERBS,
        session_list_tool,
        read_only=True,
    ),
    ToolDef(
        "session",
        "Interactive sessions: harness conversations the daemon drives turn by turn. A "
        "sent prompt is queued and delivered in order as the session's next turn.",
        SESSION_VERBS,
        session_tool,
    ),
    ToolDef(
        "project",
        "Projects: every workdir a spec is tagged with, a graph runs in or a session works "
        "in (= `canopy project list --json`).",
        PROJECT_VERBS,
        project_tool,
        read_only=True,
    ),
    ToolDef(
        "server",
        "Whether a Canopy daemon serves (= `canopy server check --json`): runs and "
        "messages wait without one; the store tools work either way. And whether the agent "
        "CLIs in use will run (= `canopy doctor --json`).",
        SERVER_VERBS,
        server_tool,
        read_only=True,
    ),
)
