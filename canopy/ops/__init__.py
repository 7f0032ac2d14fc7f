"""Operations: every verb Canopy offers, implemented once.

The CLI, the MCP server and the TUI call these and print what they return (plain
JSON-ready dicts). Each operation runs in one transaction and raises
:class:`canopy.errors.Refused` before writing anything when its input is wrong.
"""
