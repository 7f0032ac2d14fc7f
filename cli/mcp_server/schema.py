"""What ``tools/list`` publishes for each tool: its description, input schema, output
schema and hints, all generated from the tool's signature and verb table.

The SDK turns the signature into the input schema; this module adds what a signature
cannot say: the fixed values an argument takes (as an enum), each action's arguments (in
the description) and the shape of the answer (the output schema). Generating them from
the tables the dispatcher checks against keeps them from drifting from it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.tools import Tool as Registration
from mcp.types import Tool, ToolAnnotations

from canopy.backlog.specformat import SECTION_NAMES
from canopy.cli.mcp_server.tools import ToolDef
from canopy.contracts.graph_run_signals import CONTINUE_MODES
from canopy.permissions import PERMISSION_LEVELS
from canopy.statuses import SET_STATUS_ACTIONS, SPEC_STATUSES


@dataclass(frozen=True)
class Published:
    """A tool as the server serves it."""

    tool: ToolDef
    listing: Tool
    """Its entry in ``tools/list``."""
    validate: Callable[[dict[str, Any]], dict[str, Any]]
    """The SDK's reading of a call's arguments against the signature (raises pydantic's
    ``ValidationError``): the keyword arguments to call the tool function with."""


def publish(tools: tuple[ToolDef, ...]) -> dict[str, Published]:
    """Every tool, by name, as ``tools/list`` shows it (in the order given)."""
    choices = _fixed_values()
    return {tool.name: _published(tool, choices) for tool in tools}


def _published(tool: ToolDef, choices: Mapping[str, tuple[str, ...]]) -> Published:
    """One tool's listing, with the SDK's input schema and argument model of its function."""
    description = _description(tool)
    registration = Registration.from_function(tool.fn, name=tool.name, description=description)
    listing = Tool(
        name=tool.name,
        description=description,
        input_schema=_with_choices(registration.parameters, choices),
        output_schema=_output_schema(tool),
        annotations=ToolAnnotations(
            read_only_hint=tool.read_only, destructive_hint=not tool.read_only
        ),
    )
    return Published(tool, listing, registration.fn_metadata.validate_arguments)


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


def _fixed_values() -> dict[str, tuple[str, ...]]:
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


def _with_choices(schema: dict[str, Any], choices: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """``schema`` with each fixed-value argument's string arm an enum of its values."""
    for name, values in choices.items():
        spec = schema["properties"].get(name)
        if spec is None:
            continue
        for arm in spec.get("anyOf", [spec]):
            if arm.get("type") == "string":
                arm["enum"] = list(values)
    return schema


def _output_schema(tool: ToolDef) -> dict[str, Any]:
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
