"""``canopy graph continue|pause|stop|reset``: steering a run.

Each command is refused from the store when it does not apply, then signals the run's
workflow and waits a few seconds for the store to show the effect (see docs/control.md).
The commands' bodies are :mod:`canopy.cli.steering`, imported when a command runs, not
when ``canopy graph`` is built for its help.
"""

from typing import Annotated

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.store import open_store

GraphArgument = Annotated[str, typer.Argument(help="Graph name or id prefix.")]


def continue_run(
    graph: GraphArgument,
    mode: Annotated[
        str,
        typer.Option("--mode", help="recheck (default), run_from_node or skip_next_spec."),
    ] = "recheck",
    node: Annotated[
        str | None,
        typer.Option("--node", help="run_from_node: start at this node (default: the first)."),
    ] = None,
    spec: Annotated[
        str | None,
        typer.Option("--spec", help="run_from_node: start this pending spec (default: the next)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Resume a paused graph: re-check the tree, start a spec at a node, or skip a spec."""
    from canopy.cli import steering

    steering.continue_run(open_store(), graph, mode, node, spec, as_json)


def pause(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Pause a running graph at the next spec boundary."""
    from canopy.cli import steering

    steering.pause(open_store(), graph, as_json)


def stop(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Kill the node in flight, mark its spec interrupted and pause."""
    from canopy.cli import steering

    steering.stop(open_store(), graph, as_json)


def reset(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Return the graph to idle: end its run, clear the blocker, reopen bound specs."""
    from canopy.cli import steering

    steering.reset(open_store(), graph, as_json)


def register(graph_app: typer.Typer) -> None:
    """Add ``continue``, ``pause``, ``stop`` and ``reset`` to the ``graph`` sub-app."""
    graph_app.command("continue")(continue_run)
    graph_app.command("pause")(pause)
    graph_app.command("stop")(stop)
    graph_app.command("reset")(reset)
