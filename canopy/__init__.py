"""Canopy core: domain models, spec format, store and operations.

Front ends (``cli/``: the CLI and the MCP server) only adapt what lives here, so
every rule is implemented once.
"""
