"""What a run's start checks without the store: the agent CLIs its graph launches are
here, whether its git tree is checked on this machine, and which branch a run of lanes
integrates into. :mod:`canopy.ops.runs` applies them, with the checks that need the
store, before anything is written.
"""

from __future__ import annotations

import os

from canopy.errors import Refused
from canopy.temporal import client as temporal_client
from canopy.workdir import require_work_tree


def lanes_target(lanes: int, workdir: str, tree_checked: bool) -> str | None:
    """For a run of more than one lane, the branch it integrates into: the one checked
    out in the workdir. ``None`` for a run of one lane, and for a workdir that is only on
    the run's host: its worker reads the branch there as it opens the first lane."""
    if lanes == 1 or not tree_checked:
        return None
    from canopy.lanes import target_branch

    require_work_tree(workdir)
    return target_branch(workdir)


def refuse_missing_platforms(graph: str, platforms: list[str]) -> None:
    """Refuse a run on this machine whose agents could not launch here: nothing would get
    done, each spec failing in a fraction of a second."""
    from canopy.platforms import missing_program

    for platform in platforms:
        missing = missing_program(platform)
        if missing is not None:
            raise Refused(f"graph {graph} needs platform {platform}, but {missing}, or use demo")


def checks_tree_here(host: str, workdir: str) -> bool:
    """Whether the launch guard checks ``workdir``'s git tree on this machine: always for a
    run on this host, and for a run on another host when the workdir is here too (that
    host itself under another name, or a shared mount). Another host's workdir that is
    not here is that host's worker's to check."""
    return host == temporal_client.this_host() or os.path.exists(workdir)
