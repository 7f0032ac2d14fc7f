"""The MCP protocol layer: Canopy's tools on the SDK's low-level server, over stdio.

The server registers two handlers, ``tools/list`` and ``tools/call``, and nothing else.
The SDK derives the advertised capabilities from the handlers a server has, so
``initialize`` advertises only the tools capability (with no list-changed subscription:
the tool list never changes), and prompts, resources and every other method answer
"method not found", as the protocol asks of a capability a server does not declare.
``serverInfo.version`` is the package version.

A call to an unknown tool is a JSON-RPC error (-32602, invalid params), not a tool
result. A known tool's arguments are held strictly to its input schema
(:mod:`~canopy.cli.mcp_server.strict`) before the SDK's argument model reads them; any
problem with them is a one-line tool error, as is every refusal.

Stdio is the only transport: the server opens no network port.
"""

from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import RequestStateBoundary, RequestStateSecurity
from mcp.server.mcpserver.utilities.logging import configure_logging
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
)
from pydantic import ValidationError

from canopy.cli.mcp_server.dispatch import error_result
from canopy.cli.mcp_server.schema import Published, publish
from canopy.cli.mcp_server.strict import (
    argument_error,
    refuse_unknown_arguments,
    refuse_wrong_types,
)
from canopy.cli.mcp_server.tools import TOOLS
from canopy.errors import Refused
from canopy.version import canopy_version

INSTRUCTIONS = (
    "Canopy runs AI coding agents unattended over queues of specs (tagged task "
    "descriptions) through graphs of agent and command nodes, on Temporal. Specs, queues "
    "and graphs answer to their full id or any unique id prefix; queues and graphs also to "
    "their exact name. Results are the JSON the `canopy` CLI prints with --json; a refused "
    "call writes nothing and says why in one line."
)


def build_server() -> Server[Any]:
    """A server with every Canopy tool registered (no transport attached yet)."""
    published = publish(TOOLS)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=[tool.listing for tool in published.values()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = published.get(params.name)
        if tool is None:
            known = ", ".join(published)
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are {known}")
        return await _call(tool, params.arguments or {})

    server: Server[Any] = Server(
        "canopy",
        version=canopy_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # A requestState Canopy never issued (it asks no follow-up questions) is refused.
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name)
    )
    return server


async def _call(published: Published, arguments: dict[str, Any]) -> CallToolResult:
    """Check ``arguments`` strictly, read them with the SDK's model, and run the tool."""
    tool = published.tool
    try:
        refuse_unknown_arguments(tool, arguments)
        refuse_wrong_types(tool, arguments, published.listing.input_schema)
        try:
            validated = published.validate(arguments)
        except ValidationError as error:
            raise Refused(argument_error(tool, error)) from error
    except Refused as refusal:
        return error_result(refusal.message)
    return await tool.fn(**validated)


def serve() -> None:
    """Serve the tools over stdio until the client closes stdin (``canopy mcp``); the
    SDK's warnings go to stderr, the host's log for this server."""
    configure_logging("WARNING")
    server = build_server()

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
