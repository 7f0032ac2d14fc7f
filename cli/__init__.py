"""Front ends: the ``canopy`` CLI (and later the MCP server and TUI). They parse, call an
operation in :mod:`canopy`, and print; no rule lives here."""
