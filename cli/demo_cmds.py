"""``canopy demo``: the guided tour (:mod:`canopy.cli.demo`) as a command."""

from pathlib import Path
from typing import Annotated

import typer

from canopy.cli import demo as demo_tour
from canopy.temporal.devserver import DEFAULT_PORT, DEFAULT_UI_PORT

DemoPort = Annotated[
    int, typer.Option("--port", min=1, max=65535, help="Frontend gRPC port of the dev server.")
]
DemoUiPort = Annotated[
    int, typer.Option("--ui-port", min=1, max=65535, help="Web UI port of the dev server.")
]


def demo(
    home: Annotated[
        Path, typer.Option("--home", help="Scratch data dir (wiped first).")
    ] = demo_tour.DEFAULT_HOME,
    port: DemoPort = DEFAULT_PORT,
    ui_port: DemoUiPort = DEFAULT_UI_PORT,
) -> None:
    """A guided tour on a scratch data dir: backlog, queues, then a real graph run over the
    queue on the embedded Temporal server (what `make demo` runs)."""
    demo_tour.tour(home, port, ui_port)
