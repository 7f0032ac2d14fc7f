"""Human renderings of the commands' results (no typer import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

from canopy.cli.render import print_block, print_line, print_table
from canopy.contracts.graph_run_blocker import stored_blocker
from canopy.usagefmt import UsageCounts, cost_text


def show_spec_list(specs: list[dict[str, Any]]) -> None:
    """The backlog as a table."""
    print_table(
        "Specs",
        ["id", "name", "status", "workdir"],
        [[s["id"], s["name"], s["status"], s["workdir"] or ""] for s in specs],
    )


def show_projects(projects: list[str]) -> None:
    """The projects, one workdir a row."""
    print_table("Projects", ["workdir"], [[project] for project in projects])


def show_queues(queues: list[dict[str, Any]]) -> None:
    """Every queue with its counts."""
    print_table(
        "Queues",
        ["id", "name", "members", "pending"],
        [[q["id"], q["name"], q["members"], q["pending"]] for q in queues],
    )


def show_queue(listing: dict[str, Any]) -> None:
    """One queue's members in order; once a run went over it, each member's outcome in
    the latest run (blank while it has none: not reached, or under way) and that run."""
    columns = ["#", "spec", "name", "group", "status"]
    rows = [
        [m["position"], m["spec_id"], m["name"], m["group"] or "", m["status"]]
        for m in listing["members"]
    ]
    run = listing["latest_run"]
    if run is not None:
        columns.append("latest run")
        for row, member in zip(rows, listing["members"], strict=True):
            row.append(run["outcomes"].get(member["spec_id"]) or "")
    print_table(f"Queue {listing['name']} ({listing['id']})", columns, rows)
    if run is not None:
        print_line(
            f"latest run: {run['id']} of graph {run['graph']} ({run['status']}), "
            f"started {run['started_at']}"
        )


def show_queue_list(result: dict[str, Any]) -> None:
    """``queue list``: all queues, or one queue when the result names one."""
    if "queues" in result:
        show_queues(result["queues"])
    else:
        show_queue(result)


def show_spec(spec: dict[str, Any]) -> None:
    """One spec: its facts, then its body."""
    print_line(f"{spec['id']}  {spec['name']}")
    print_line(f"status: {spec['status']}   workdir: {spec['workdir'] or '(none)'}")
    if spec["graphs"]:
        print_line(f"bound to: {', '.join(spec['graphs'])}")
    if spec["queues"]:
        print_line("queues: " + ", ".join(f"{q['name']} ({q['id']})" for q in spec["queues"]))
    if spec["needs_conversion"]:
        print_line("needs conversion: heading format; rewrite it into the seven tags")
    print_line("")
    print_block(spec["body"].rstrip("\n"))


def show_created(result: dict[str, Any]) -> None:
    """``spec create`` and ``graph create``: the new id and name."""
    print_line(f"created {result['id']}  {result['name']}")


def show_updated(result: dict[str, Any]) -> None:
    """``spec update`` and ``graph edit``: the id and (new) name."""
    print_line(f"updated {result['id']}  {result['name']}")


def show_deleted(result: dict[str, Any]) -> None:
    """``spec delete``: the id that is gone."""
    print_line(f"deleted {result['id']}")


def show_graph_deleted(result: dict[str, Any]) -> None:
    """``graph delete``: the id that is gone and how many specs it released."""
    released = len(result["released_specs"])
    schedules = len(result.get("deleted_schedules", []))
    also = f", {schedules} schedule(s) deleted" if schedules else ""
    print_line(f"deleted {result['id']} ({released} spec(s) now standalone{also})")


def show_status(spec: dict[str, Any]) -> None:
    """``spec set-status``: the status the spec now has."""
    print_line(f"{spec['id']} is now {spec['status']}")


def show_graph_list(graphs: list[dict[str, Any]]) -> None:
    """Every graph with its status and, when it stopped on one, its blocker."""
    print_table(
        "Graphs",
        ["id", "name", "status", "nodes", "specs", "active run", "blocker"],
        [
            [
                g["id"],
                g["name"],
                g["status"],
                g["nodes"],
                g["specs"],
                g["active_run"] or "",
                blocker_text(g["blocker"]),
            ]
            for g in graphs
        ],
    )


def blocker_text(stored: Mapping[str, Any] | None) -> str:
    """The one-line message of a blocker in a command's JSON answer (blank for none)."""
    blocker = stored_blocker(stored)
    return "" if blocker is None else blocker.message


def show_usage(report: dict[str, Any]) -> None:
    """``canopy usage``: by platform and model, then the total."""
    window = f" since {report['since']}" if report["since"] else ""
    graph = f" of graph {report['graph_id']}" if report["graph_id"] else ""
    rows = [
        [row["platform"] or "", row["model"] or "", *_usage_cells(row)]
        for row in report["by_platform_and_model"]
    ]
    rows.append(["total", "", *_usage_cells(report["total"])])
    print_table(
        f"Usage{graph}{window}",
        ["platform", "model", "runs", "input", "output", "cache read", "cache write", "cost"],
        rows,
    )


def _usage_cells(row: Mapping[str, Any]) -> list[str]:
    """Runs, tokens and cost of one ``canopy usage`` row (blank: nothing reported)."""
    used = UsageCounts.picked(row)
    cells = [str(row["runs"])]
    cells += ["" if count is None else f"{count:,}" for count in used.tokens()]
    cells.append("" if used.cost_usd is None else cost_text(used.cost_usd))
    return cells
