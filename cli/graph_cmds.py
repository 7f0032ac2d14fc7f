"""``canopy graph …``: define graphs from JSON or TOML files, inspect them and their runs.

The operations (pydantic, the graph model) are imported by the commands that
run them, so ``canopy graph --help`` does not load them.
"""

from pathlib import Path
from typing import Annotated

import typer

from canopy.cli import control_cmds, logs_cmds, run_cmds, schedule_cmds, views
from canopy.cli.inputs import read_definition
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit
from canopy.cli.store import open_store

app = typer.Typer(no_args_is_help=True)

DefinitionFile = Annotated[
    Path,
    typer.Option("--file", "-f", help="JSON or TOML definition ('-' for stdin)."),
]
HostOption = Annotated[
    str | None,
    typer.Option(
        "--host",
        help="The machine holding the workdir (its CANOPY_HOST), where runs go by default; "
        "overrides the file's host.",
    ),
]


@app.command("create")
def create(file: DefinitionFile, host: HostOption = None, as_json: JsonFlag = False) -> None:
    """Create a graph from a definition file (see docs/graphs.md for the format)."""
    from canopy.ops import graphs as ops

    result = ops.graph_create(open_store(), read_definition(file, host))
    emit(result, as_json, lambda: views.show_created(result))


@app.command("list")
def list_graphs(as_json: JsonFlag = False) -> None:
    """List every graph with its status and blocker."""
    from canopy.ops import graphs as ops

    graphs = ops.graph_list(open_store())
    emit(graphs, as_json, lambda: views.show_graph_list(graphs))


@app.command("info")
def info(graph: str, as_json: JsonFlag = False) -> None:
    """Show a graph: facts, nodes, bound specs, runs, node runs, queue progress."""
    from canopy.cli import graph_views
    from canopy.ops import graphs as ops

    result = ops.graph_info(open_store(), graph)
    emit(result.as_json(), as_json, lambda: graph_views.show_graph(result))


@app.command("edit")
def edit(
    graph: str,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="JSON or TOML fields to replace ('-' for stdin)."),
    ] = None,
    host: HostOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace the fields the file (and --host) name, keeping the others; allowed during a
    run."""
    from canopy.ops import graphs as ops

    result = ops.graph_edit(open_store(), graph, read_definition(file, host))
    emit(result, as_json, lambda: views.show_updated(result))


@app.command("delete")
def delete(graph: str, as_json: JsonFlag = False) -> None:
    """Delete a graph, its run record and its schedules; its bound specs become standalone."""
    import asyncio

    from canopy.ops import schedules

    result = asyncio.run(schedules.graph_delete(open_store(), graph))
    emit(result, as_json, lambda: views.show_graph_deleted(result))


run_cmds.register(app)
logs_cmds.register(app)
control_cmds.register(app)
schedule_cmds.register(app)
