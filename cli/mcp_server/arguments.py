"""The argument types the MCP tools share: their JSON types and their descriptions.

A tool's input schema is generated from its function's signature, so these annotated
types are where an agent reads what each argument means. Kept apart from the tool
signatures so one description serves every tool that takes the argument.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from canopy.backlog.specformat import SECTION_NAMES

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
        "ensembles, name, workdir, host, allow_dirty_start, lanes, integration, "
        "conflict_resolver, hooks — each "
        "event named replaces that event's list — or the legacy top-level on_completed hook)."
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
RunLanes = Annotated[
    int | None,
    Field(
        description="run: how many specs the run works on at once, 1 to 16, instead of the "
        "graph's lanes (docs/lanes.md)."
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
GraphAction = Annotated[
    Literal["get", "list", "usage", "logs", "schedules"], Field(description=VERB)
]
GraphEditAction = Annotated[Literal["create", "update", "delete"], Field(description=VERB)]
GraphControlAction = Annotated[
    Literal[
        "run",
        "continue",
        "pause",
        "stop",
        "reset",
        "schedule",
        "pause_schedule",
        "unpause_schedule",
        "delete_schedule",
    ],
    Field(description=VERB),
]
ScheduleId = Annotated[
    str | None,
    Field(description=f"A schedule: its {ID_PREFIX} ('sched-…'), as schedule answered."),
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
