"""Projects: the workdirs the store knows, which the TUI's project picker offers.

A project is not stored on its own: it is any workdir that a spec is tagged with, a
graph runs in or a session works in. Portable SQL, like :mod:`canopy.ops.specs`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from canopy.store.engine import Store


def project_list(store: Store) -> list[str]:
    """Every distinct workdir of specs, graphs and sessions, sorted."""
    with store.transaction() as rows:
        found = rows(
            "SELECT workdir FROM specs WHERE workdir IS NOT NULL"
            " UNION SELECT workdir FROM graphs WHERE workdir IS NOT NULL"
            " UNION SELECT workdir FROM sessions WHERE workdir IS NOT NULL"
            " ORDER BY workdir",
            {},
        )
    return [str(row["workdir"]) for row in found]


def project_of(projects: list[str], path: str) -> str | None:
    """The project ``path`` lies in: the deepest of ``projects`` that is ``path`` or one
    of its parents, so a TUI started in a subdirectory of a workdir selects it; ``None``
    when it lies in none."""
    where = normalize_workdir(path)
    inside = [p for p in projects if where == p or where.startswith(p.rstrip(os.sep) + os.sep)]
    return max(inside, key=len, default=None)
