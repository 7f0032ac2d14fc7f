"""``canopy queue …``: ordered queues of specs with context groups."""

from typing import Annotated

import typer

from canopy.cli import views
from canopy.cli.inputs import chosen_group
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit
from canopy.cli.store import open_store
from canopy.ops import queues as ops

app = typer.Typer(no_args_is_help=True)

Group = Annotated[str | None, typer.Option("--group", help="Context group label.")]


@app.command("create")
def create(name: str, as_json: JsonFlag = False) -> None:
    """Create an empty queue."""
    result = ops.queue_create(open_store(), name)
    emit(result, as_json, lambda: views.show_queue(result))


@app.command("add")
def add(queue: str, spec: str, group: Group = None, as_json: JsonFlag = False) -> None:
    """Append a spec; with --group it lands after the group's last pending member."""
    result = ops.queue_add_spec(open_store(), queue, spec, group=group)
    emit(result, as_json, lambda: views.show_queue(result))


@app.command("list")
def list_queues(
    queue: Annotated[str | None, typer.Argument()] = None, as_json: JsonFlag = False
) -> None:
    """List one queue's members in order, or every queue."""
    result = ops.queue_list(open_store(), queue)
    emit(result, as_json, lambda: views.show_queue_list(result))


@app.command("remove")
def remove(queue: str, spec: str, as_json: JsonFlag = False) -> None:
    """Take a spec out of a queue (the spec stays in the backlog)."""
    result = ops.queue_remove_spec(open_store(), queue, spec)
    emit(result, as_json, lambda: views.show_queue(result))


@app.command("reorder")
def reorder(
    queue: str,
    specs: Annotated[list[str], typer.Argument(help="Every member, in the new order.")],
    as_json: JsonFlag = False,
) -> None:
    """Replace the queue's whole order; groups' pending members must stay together."""
    result = ops.queue_reorder(open_store(), queue, specs)
    emit(result, as_json, lambda: views.show_queue(result))


@app.command("group")
def group(
    queue: str,
    spec: str,
    group: Annotated[str | None, typer.Argument(help="The group label to set.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Clear the member's group.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Set a member's context group (moving it next to the group) or --clear it."""
    result = ops.queue_set_group(open_store(), queue, spec, chosen_group(group, clear))
    emit(result, as_json, lambda: views.show_queue(result))
