"""The MCP server: Canopy's operations as tools for AI agents (docs/mcp.md).

Ten tools, each with an ``action`` argument that selects the verb and flat, typed
arguments: ``spec``, ``spec_edit``, ``queue``, ``graph``, ``graph_edit``,
``graph_control``, ``session_list``, ``session``, ``project`` and ``server``. Every
action calls the same operation as the CLI command it mirrors, so an agent gets the same
validation and the same answers as a person: a result is the JSON ``canopy … --json``
prints (as text, and as ``structuredContent`` under ``result``), and a
:class:`~canopy.errors.Refused` comes back as a tool error carrying the CLI's one-line
message (without its ``error: `` prefix).

One job a module: :mod:`.arguments` (the shared argument types), :mod:`.verbs` (each
action's operation and arguments), :mod:`.dispatch` (running one action),
:mod:`.tools` (the tool signatures), :mod:`.schema` (what ``tools/list`` publishes),
:mod:`.strict` (arguments held to the schema) and :mod:`.server` (the protocol, on the
SDK's public low-level server, over stdio).
"""
