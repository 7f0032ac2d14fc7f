"""Operations: every verb Canopy offers, implemented once.

The CLI and the MCP server call these and print what they return (plain
JSON-ready dicts). Each operation runs in one transaction and raises
:class:`canopy.errors.Refused` before writing anything when its input is wrong.
"""
