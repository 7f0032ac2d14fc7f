"""The terminal UI, ``canopy tui`` (Textual): a front end beside the CLI. It reads and
acts only through the operations in :mod:`canopy.ops`, as the CLI and the MCP server do;
no rule lives here. ``canopy tui`` imports it only when run, so no other command loads
Textual."""
