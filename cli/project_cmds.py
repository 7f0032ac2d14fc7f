"""``canopy project …``: the projects (workdirs) the store knows, as the TUI's picker
offers them."""

import typer

from canopy.cli import views
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit
from canopy.cli.store import open_store
from canopy.ops import projects as ops

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_projects(as_json: JsonFlag = False) -> None:
    """List every workdir a spec is tagged with, a graph runs in or a session works in."""
    result = ops.project_list(open_store())
    emit(result, as_json, lambda: views.show_projects(result))
