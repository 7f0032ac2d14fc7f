"""``canopy spec …``: the standalone spec backlog."""

from pathlib import Path
from typing import Annotated

import typer

from canopy.cli import views
from canopy.cli.inputs import new_body, read_body
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_block, print_line
from canopy.cli.store import open_store
from canopy.ops import specs as ops

app = typer.Typer(no_args_is_help=True)

BodyFile = Annotated[
    Path | None,
    typer.Option("--body-file", help="Read the tagged body from this file ('-' for stdin)."),
]
BodyText = Annotated[str | None, typer.Option("--body", help="The tagged body as text.")]
Workdir = Annotated[
    str | None, typer.Option("--workdir", help="Tag the spec to this workdir (made absolute).")
]


ListWorkdir = Annotated[
    str | None, typer.Option("--workdir", help="Only specs tagged to this workdir.")
]
Status = Annotated[str | None, typer.Option(help="Only specs with this status.")]
Standalone = Annotated[
    bool, typer.Option("--standalone", help="Only standalone specs (bound to no graph).")
]
Contains = Annotated[
    str | None, typer.Option("--contains", help="Only specs whose name contains this text.")
]


@app.command("list")
def list_specs(
    workdir: ListWorkdir = None,
    status: Status = None,
    standalone: Standalone = False,
    contains: Contains = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List specs, optionally filtered by workdir tag, status and name, or standalone only."""
    specs = ops.spec_list(open_store(), workdir, status, standalone, contains, limit)
    emit(specs, as_json, lambda: views.show_spec_list(specs))


@app.command("count")
def count(
    workdir: ListWorkdir = None,
    status: Status = None,
    standalone: Standalone = False,
    contains: Contains = None,
    as_json: JsonFlag = False,
) -> None:
    """Count the specs `spec list` lists with the same filters."""
    result = ops.spec_count(open_store(), workdir, status, standalone, contains)
    emit(result, as_json, lambda: print_line(str(result["count"])))


@app.command("get")
def get(spec: str, as_json: JsonFlag = False) -> None:
    """Show one spec with its full body (SPEC: id or unique prefix)."""
    result = ops.spec_get(open_store(), spec)
    emit(result, as_json, lambda: views.show_spec(result))


@app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", help="One-line name.")],
    body_file: BodyFile = None,
    body: BodyText = None,
    workdir: Workdir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a standalone spec from a tagged body."""
    text = new_body(body_file, body)
    result = ops.spec_create(open_store(), name=name, body=text, workdir=workdir)
    emit(result, as_json, lambda: views.show_created(result))


@app.command("update")
def update(
    spec: str,
    name: Annotated[str | None, typer.Option("--name", help="New name.")] = None,
    body_file: BodyFile = None,
    body: BodyText = None,
    workdir: Workdir = None,
    clear_workdir: Annotated[
        bool, typer.Option("--clear-workdir", help="Remove the workdir tag.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Update a spec's name, body or workdir tag; what you do not give is kept."""
    text = read_body(body_file, body)
    result = ops.spec_update(
        open_store(), spec, name=name, body=text, workdir=workdir, clear_workdir=clear_workdir
    )
    emit(result, as_json, lambda: views.show_updated(result))


@app.command("delete")
def delete(spec: str, as_json: JsonFlag = False) -> None:
    """Delete an unbound spec (it leaves every queue it was in)."""
    result = ops.spec_delete(open_store(), spec)
    emit(result, as_json, lambda: views.show_deleted(result))


@app.command("set-status")
def set_status(
    spec: str,
    action: Annotated[str, typer.Argument(help="complete, skip or reopen.")],
    as_json: JsonFlag = False,
) -> None:
    """Admin transition of a standalone spec: complete, skip or reopen."""
    result = ops.spec_set_status(open_store(), spec, action)
    emit(result, as_json, lambda: views.show_status(result))


@app.command("section")
def section(
    spec: str,
    name: Annotated[str, typer.Argument(help="summary, context, goal, requirements, …")],
    as_json: JsonFlag = False,
) -> None:
    """Print one canonical section of a spec body as markdown."""
    result = ops.spec_section(open_store(), spec, name)
    emit(result, as_json, lambda: print_block(result["markdown"]))
