"""``canopy mcp``: serve Canopy's tools to an AI agent over MCP on stdio (docs/mcp.md).

The MCP SDK is imported inside the command: importing ``mcp.server`` takes most of a
second, and every other command loads this module through :mod:`canopy.cli.app`.
"""

import typer


def mcp() -> None:
    """Serve Canopy's tools to an agent over MCP (stdio).

    Agent hosts launch it: `claude mcp add canopy -- canopy mcp` (docs/mcp.md).

    It speaks MCP on stdin/stdout only and opens no network port.
    """
    from canopy.cli.mcp_server import serve

    serve()


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command to ``app``."""
    app.command("mcp")(mcp)
