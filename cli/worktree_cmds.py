"""``canopy worktree …``: the lane worktrees runs of lanes made, and cleaning up those a
crashed or deleted run left behind (docs/lanes.md)."""

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_line, print_table
from canopy.cli.store import open_store

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_worktrees(as_json: JsonFlag = False) -> None:
    """List the lane worktrees Canopy made, with their run's status; never a worktree of
    yours."""
    from canopy.ops import worktrees

    found = worktrees.worktree_list(open_store())

    def human() -> None:
        rows = [
            [
                lane["worktree"],
                lane["branch"],
                lane["run_id"],
                lane["run_status"] or "(gone)",
                "yes" if lane["leftover"] else "no",
            ]
            for lane in found
        ]
        print_table("Lane worktrees", ["worktree", "branch", "run", "run status", "leftover"], rows)

    emit(found, as_json, human)


@app.command("prune")
def prune_worktrees(as_json: JsonFlag = False) -> None:
    """Remove the lane worktrees whose run is over; a branch holding work is kept."""
    from canopy.ops import worktrees

    result = worktrees.worktree_prune(open_store())

    def human() -> None:
        print_line(f"removed {len(result['removed'])} lane worktree(s)")
        for branch in result["kept_branches"]:
            print_line(f"kept branch {branch}: it holds commits its target does not have")

    emit(result, as_json, human)
