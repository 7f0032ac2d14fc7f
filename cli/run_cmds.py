"""``canopy graph run`` and ``canopy graph wait``: starting runs and waiting for them.

Each command imports the run operations (the Temporal SDK) when it runs, not
when ``canopy graph`` is built for its help.
"""

from typing import Annotated, Any

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import elapsed, emit, print_line, spinner
from canopy.cli.store import open_store
from canopy.cli.views import blocker_text
from canopy.limits import WAIT_SECONDS, check_range
from canopy.timefmt import as_utc, utcnow


def run(
    graph: Annotated[str, typer.Argument(help="Graph name or id prefix.")],
    queue: Annotated[
        str | None, typer.Option("--queue", help="Drain this queue instead of bound specs.")
    ] = None,
    workdir: Annotated[
        str | None, typer.Option("--workdir", help="Run in this workdir instead of the graph's.")
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="The machine holding the workdir (its CANOPY_HOST; default: this one)."
        ),
    ] = None,
    lanes: Annotated[
        int | None,
        typer.Option("--lanes", help="Specs worked on at once, 1 to 16 (default: the graph's)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a run over the graph's bound specs or a queue (refused if the tree is dirty or
    no worker serves the host)."""
    import asyncio

    from canopy.ops import runs

    result = asyncio.run(
        runs.graph_run(open_store(), graph, queue=queue, workdir=workdir, host=host, lanes=lanes)
    )

    def human() -> None:
        print_line(f"started {result['run_id']} of {result['graph_name']} in {result['workdir']}")
        print_line(f"workflow {result['workflow_id']} — watch: canopy graph wait {graph}")

    emit(result, as_json, human)


def wait(
    graph: Annotated[str, typer.Argument(help="Graph name or id prefix.")],
    timeout: Annotated[float, typer.Option("--timeout", help="Give up after S seconds.")] = 3600,
    as_json: JsonFlag = False,
) -> None:
    """Block until the graph is no longer running; print how it settled."""
    import asyncio

    from canopy.ops import runs

    check_range(timeout, WAIT_SECONDS, "--timeout")
    in_flight: dict[str, dict[str, Any] | None] = {"node": None}

    def watch(node: dict[str, Any] | None) -> None:
        in_flight["node"] = node

    with spinner(lambda: _waiting_for(graph, in_flight["node"])):
        result = asyncio.run(runs.wait_until_settled(open_store(), graph, timeout, watch))

    def human() -> None:
        blocker = result["blocker"]
        print_line(f"{result['name']}: {result['status']}")
        if blocker:
            print_line(f"blocker: {blocker_text(blocker)}")

    emit(result, as_json, human)


def _waiting_for(graph: str, node: dict[str, Any] | None) -> str:
    """The status line of ``graph wait``: the spec and node running, and for how long."""
    if node is None:
        return f"waiting for {graph} to settle…"
    spec = f"{node['spec_name']} ({node['spec_id']})" if node["spec_name"] else node["spec_id"]
    running = elapsed((utcnow() - as_utc(node["started_at"])).total_seconds())
    return f"{graph}: spec {spec}, node {node['node']} running for {running}; waiting"


def register(graph_app: typer.Typer) -> None:
    """Add ``run`` and ``wait`` to the ``graph`` sub-app."""
    graph_app.command("run")(run)
    graph_app.command("wait")(wait)
