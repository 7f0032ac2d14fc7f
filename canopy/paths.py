"""Where Canopy keeps its data: ``CANOPY_HOME`` or the platform's user data dir.

Imported by the CLI's fast lane, so the string-returning helpers use ``os.path`` only;
pathlib and platformdirs load when something asks for them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def home_dir() -> str:
    """The data/config directory as a string, created on first use."""
    configured = os.environ.get("CANOPY_HOME")
    if configured:
        home = os.path.abspath(os.path.expanduser(configured))
    else:
        import platformdirs

        home = platformdirs.user_data_dir("canopy", appauthor=False)
    os.makedirs(home, exist_ok=True)
    return home


def canopy_home() -> Path:
    """The data/config directory, created on first use."""
    from pathlib import Path

    return Path(home_dir())


def sqlite_path() -> str:
    """The default store file inside the data dir."""
    return os.path.join(home_dir(), "canopy.db")


def configured_db_url() -> str | None:
    """``CANOPY_DB_URL`` when set (Postgres at scale), else ``None`` (the SQLite file)."""
    return os.environ.get("CANOPY_DB_URL") or None
