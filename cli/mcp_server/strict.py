"""Strict arguments: a call's arguments held to the published input schema, and the
SDK's argument errors reworded as one line naming the argument.

The SDK validates arguments with the pydantic model of the tool's signature, which is
lenient where an agent needs it strict: it reads ``"yes"`` as true and ``true`` as 1,
parses a string holding JSON into a list or object, and drops arguments the tool does not
have. These checks run first and refuse all of that in the CLI's one-line form, such as
``spec: unknown action 'fetch'; one of list, count, get, section``, instead of a
multi-line pydantic dump.
"""

import inspect
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from canopy.cli.mcp_server.tools import ToolDef
from canopy.errors import Refused


def refuse_unknown_arguments(tool: ToolDef, arguments: Mapping[str, Any]) -> None:
    """Refuse argument names the tool does not have (pydantic would drop them silently)."""
    unknown = sorted(set(arguments) - set(inspect.signature(tool.fn).parameters))
    if unknown:
        raise Refused(f"{tool.name}: unknown argument {', '.join(unknown)}")


def refuse_wrong_types(
    tool: ToolDef, arguments: Mapping[str, Any], schema: Mapping[str, Any]
) -> None:
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
        raise Refused(f"{tool.name}: argument {name} must be {wanted}, not {_shown(value)}")


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


def argument_error(tool: ToolDef, error: ValidationError) -> str:
    """The first schema violation of a call, as one line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "missing":
        return f"{tool.name}: missing argument {where}"
    if where == "action":
        return f"{tool.name}: unknown action {first['input']!r}; one of {', '.join(tool.verbs)}"
    return f"{tool.name}: argument {where}: {first['msg']}"
