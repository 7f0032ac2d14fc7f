"""Front ends: the ``canopy`` CLI and the MCP server. They parse, call an operation in
:mod:`canopy.ops`, and print; no rule lives here."""
