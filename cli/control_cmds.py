"""``canopy graph continue|pause|stop|reset``: steering a run (DESIGN §6.4 to §6.8).

Each command is refused from the store when it does not apply, then signals the run's
workflow and waits a few seconds for the store to show the effect (see docs/control.md).
The control operations (SQLAlchemy, the Temporal SDK) are imported when a command runs,
not when ``canopy graph`` is built for its help.
"""

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_line, spinner
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
    from canopy.ops import control

    store = open_store()
    _steer(f"continuing {graph}", control.graph_continue(store, graph, mode, node, spec), as_json)


def pause(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Pause a running graph at the next spec boundary."""
    from canopy.ops import control

    _steer(f"pausing {graph}", control.graph_pause(open_store(), graph), as_json)


def stop(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Kill the node in flight, mark its spec interrupted and pause."""
    from canopy.ops import control

    _steer(f"stopping {graph}", control.graph_stop(open_store(), graph), as_json)


def reset(graph: GraphArgument, as_json: JsonFlag = False) -> None:
    """Return the graph to idle: end its run, clear the blocker, reopen bound specs."""
    from canopy.ops import control

    _steer(f"resetting {graph}", control.graph_reset(open_store(), graph), as_json)


def _steer(doing: str, work: Coroutine[Any, Any, dict[str, Any]], as_json: bool) -> None:
    """Run one control command with a spinner on stderr, then print its outcome."""
    with spinner(f"{doing}…"):
        result = asyncio.run(work)
    emit(result, as_json, lambda: _show(result))


def _show(result: dict[str, Any]) -> None:
    if result["signal"] is not None:
        print_line(f"sent {result['signal']} to {result['workflow_id']}")
    else:
        print_line("reset in the store (no workflow to signal)")
    print_line(f"{result['name']}: {result['status']}")
    if result["blocker"]:
        print_line(f"blocker: {result['blocker'].get('message', result['blocker'])}")
    if result["note"]:
        print_line(f"note: {result['note']}")


def register(graph_app: typer.Typer) -> None:
    """Add ``continue``, ``pause``, ``stop`` and ``reset`` to the ``graph`` sub-app."""
    graph_app.command("continue")(continue_run)
    graph_app.command("pause")(pause)
    graph_app.command("stop")(stop)
    graph_app.command("reset")(reset)
