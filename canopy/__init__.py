"""Canopy core: domain models, spec format, store and operations.

Front ends (``cli/``: the CLI, the MCP server, the TUI) only adapt what lives here, so
every rule is implemented once.
"""
