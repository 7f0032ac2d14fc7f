"""``canopy tui``: the terminal UI. Textual loads only when this command runs."""

from typing import Annotated

import typer


def tui(
    workdir: Annotated[
        str | None,
        typer.Option("--workdir", help="Start on this project (default: the one you are in)."),
    ] = None,
) -> None:
    """Open the terminal UI: backlog, queues, graphs and sessions by project."""
    from canopy.tui.app import run

    run(workdir)
