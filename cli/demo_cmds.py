"""``canopy demo``: the guided tour (:mod:`canopy.cli.demo`) as a command."""

from pathlib import Path
from typing import Annotated

import typer

from canopy.cli import demo as demo_tour
from canopy.cli.server_cmds import PortOption, UiPortOption


def demo(
    home: Annotated[
        Path, typer.Option("--home", help="Scratch data dir (wiped first).")
    ] = demo_tour.DEFAULT_HOME,
    port: PortOption = 7233,
    ui_port: UiPortOption = 8233,
) -> None:
    """A guided tour on a scratch data dir: backlog, queues, then a real graph run over the
    queue on the embedded Temporal server (what `make demo` runs)."""
    demo_tour.tour(home, port, ui_port)
