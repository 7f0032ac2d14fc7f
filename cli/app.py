"""The typer application: one sub-app per noun, registered here."""

from pathlib import Path
from typing import Annotated

import typer

from canopy.cli import (
    control_cmds,
    graph_cmds,
    mcp_cmds,
    queue_cmds,
    run_cmds,
    server_cmds,
    session_cmds,
    spec_cmds,
)
from canopy.cli import demo as demo_tour

app = typer.Typer(
    name="canopy",
    help="Run AI coding agents unattended over a backlog of specs, on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(spec_cmds.app, name="spec", help="The spec backlog.")
app.add_typer(queue_cmds.app, name="queue", help="Ordered queues of specs with context groups.")
app.add_typer(graph_cmds.app, name="graph", help="Graphs: pipelines of agent and command nodes.")
run_cmds.register(graph_cmds.app)
control_cmds.register(graph_cmds.app)
session_cmds.register(app)
server_cmds.register(app)
mcp_cmds.register(app)


@app.command("demo")
def demo(
    home: Annotated[
        Path, typer.Option("--home", help="Scratch data dir (wiped first).")
    ] = demo_tour.DEFAULT_HOME,
    port: server_cmds.PortOption = 7233,
    ui_port: server_cmds.UiPortOption = 8233,
) -> None:
    """A guided tour on a scratch data dir: backlog, queues, then a real graph run over the
    queue on the embedded Temporal server (what `make demo` runs)."""
    demo_tour.tour(home, port, ui_port)
