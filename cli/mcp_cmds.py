"""``canopy mcp``: serve Canopy's tools to an AI agent over MCP on stdio (docs/mcp.md).

The MCP SDK is imported when the server starts: importing ``mcp.server`` takes most of a
second, which ``canopy mcp --help`` need not pay.
"""


def mcp() -> None:
    """Serve Canopy's tools to an agent over MCP (stdio).

    Agent hosts launch it: `claude mcp add canopy -- canopy mcp` (docs/mcp.md).

    It speaks MCP on stdin/stdout only and opens no network port.
    """
    from canopy.cli.mcp_server.server import serve

    serve()
