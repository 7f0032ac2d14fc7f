"""``canopy graph schedule`` and ``canopy schedule list|pause|unpause|delete``: a graph's
runs started on a cron by a Temporal Schedule (see docs/schedules.md).

Each command imports the schedule operations (and, through them, the Temporal SDK) when
it runs, not when ``canopy graph`` or ``canopy schedule`` is built for its help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_line, print_table
from canopy.cli.store import open_store

if TYPE_CHECKING:
    from collections.abc import Coroutine

app = typer.Typer(no_args_is_help=True)

ScheduleArgument = Annotated[str, typer.Argument(help="Schedule id or unique id prefix.")]


def _run(call: Coroutine[Any, Any, Any]) -> Any:
    import asyncio

    return asyncio.run(call)


def schedule(
    graph: Annotated[str, typer.Argument(help="Graph name or id prefix.")],
    cron: Annotated[
        str,
        typer.Option("--cron", help="When to start a run: 5 fields ('0 2 * * 1-5') or @daily…"),
    ],
    queue: Annotated[
        str | None, typer.Option("--queue", help="Drain this queue instead of bound specs.")
    ] = None,
    timezone: Annotated[
        str | None,
        typer.Option("--timezone", help="IANA time zone the cron is read in (default UTC)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start the graph's runs on a cron (a Temporal Schedule); a fire while it runs is
    skipped."""
    from canopy.ops import schedules

    result = _run(schedules.schedule_create(open_store(), graph, cron, queue, timezone))

    def human() -> None:
        print_line(
            f"scheduled {result['id']}: {result['graph_name']} at {result['cron']!r} "
            f"({result['timezone']}); Temporal schedule {result['temporal_id']}"
        )

    emit(result, as_json, human)


@app.command("list")
def list_schedules(
    graph: Annotated[str | None, typer.Option("--graph", help="Only this graph's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List schedules: graph, cron, paused, next fire and the latest fire's outcome."""
    from canopy.ops import schedules

    result = _run(schedules.schedule_list(open_store(), graph))
    emit(result, as_json, lambda: _show_list(result))


def _show_list(listed: list[dict[str, Any]]) -> None:
    print_table(
        "Schedules",
        ["id", "graph", "queue", "cron", "state", "next fire", "last fire"],
        [
            [
                row["id"],
                row["graph_name"],
                row["queue_name"] or "(bound specs)",
                f"{row['cron']} {row['timezone']}",
                _state(row),
                row["next_fire"] or "",
                _last_fire(row),
            ]
            for row in listed
        ],
    )


def _state(row: dict[str, Any]) -> str:
    if row["temporal"] is not None:
        return f"unknown: {row['temporal']}"
    return "paused" if row["paused"] else "active"


def _last_fire(row: dict[str, Any]) -> str:
    if row["last_fired_at"] is None:
        return "never"
    return f"{row['last_fired_at']} {row['last_outcome']}: {row['last_line']}"


@app.command("pause")
def pause(schedule_id: ScheduleArgument, as_json: JsonFlag = False) -> None:
    """Pause a schedule: it does not fire until unpaused."""
    from canopy.ops import schedules

    result = _run(schedules.schedule_pause(open_store(), schedule_id))
    emit(result, as_json, lambda: print_line(f"paused {result['id']}"))


@app.command("unpause")
def unpause(schedule_id: ScheduleArgument, as_json: JsonFlag = False) -> None:
    """Unpause a schedule: it fires on its cron again (fires missed meanwhile do not run)."""
    from canopy.ops import schedules

    result = _run(schedules.schedule_unpause(open_store(), schedule_id))
    emit(result, as_json, lambda: print_line(f"unpaused {result['id']}"))


@app.command("delete")
def delete(schedule_id: ScheduleArgument, as_json: JsonFlag = False) -> None:
    """Delete a schedule, in Temporal and in the store."""
    from canopy.ops import schedules

    result = _run(schedules.schedule_delete(open_store(), schedule_id))
    emit(result, as_json, lambda: print_line(f"deleted {result['id']}"))


def register(graph_app: typer.Typer) -> None:
    """Add ``schedule`` to the ``graph`` sub-app."""
    graph_app.command("schedule")(schedule)
