"""Running one tool action: check the call against its :class:`Verb`, call the operation,
answer as the CLI would.

Every tool funnels into :func:`dispatch`, so the arguments are checked, the store opened,
errors turned into one line and results serialised in one place, the same way for all
ten tools.
"""

import inspect
import json
import traceback
from typing import Any

from mcp.types import CallToolResult, TextContent

from canopy.cli.mcp_server.verbs import Args, Verb, Verbs
from canopy.errors import Refused, debug_requested, unexpected_error_line
from canopy.limits import text_problem
from canopy.store.engine import open_store


async def dispatch(tool: str, verbs: Verbs, args: Args) -> CallToolResult:
    """Run ``args["action"]``, one of ``tool``'s ``verbs``: check the arguments, call the
    operation, answer.

    ``args`` are the tool function's parameters (its ``locals()`` on entry). A refusal,
    ours or the operation's, is an error result with exactly the refusal's line; any other
    exception is one line too (:func:`unexpected_error_line`, the CLI's last resort), so
    an agent never has to read a traceback, and the server keeps serving.
    """
    action = args["action"]
    verb = verbs[action]
    try:
        _check_arguments(tool, action, verb, args)
        result = verb.call(open_store(), args)
        if inspect.isawaitable(result):
            result = await result
    except Refused as refusal:
        return error_result(refusal.message)
    except Exception as error:
        if debug_requested():
            traceback.print_exc()  # stderr: the host's log for this server, not the agent
        return error_result(unexpected_error_line(error))
    # The same serialisation as the CLI's --json (cli.render.print_json), minus the newline;
    # the structured copy is that JSON read back, so the two cannot differ.
    text = json.dumps(result, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"result": json.loads(text)},
    )


def error_result(line: str) -> CallToolResult:
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
