"""The store as the typer commands open it: the store module is imported when a command
runs.

A command module is imported to build its command, for ``canopy spec --help`` as much as
for ``canopy spec get``; importing :mod:`canopy.store.engine` there would make every
``--help`` load the database driver it never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from canopy.store.engine import Store


def open_store() -> Store:
    """The process-wide store (:func:`canopy.store.engine.open_store`)."""
    from canopy.store import engine

    return engine.open_store()
