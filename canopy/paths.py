"""Where Canopy keeps its data: ``CANOPY_HOME`` or the platform's user data dir.

Imported by the CLI's fast lane, so it avoids heavy imports (platformdirs is loaded only
when ``CANOPY_HOME`` is unset).
"""

import os
from pathlib import Path


def canopy_home() -> Path:
    """The data/config directory, created on first use."""
    configured = os.environ.get("CANOPY_HOME")
    if configured:
        home = Path(configured).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("canopy", appauthor=False))
    home.mkdir(parents=True, exist_ok=True)
    return home


def sqlite_path() -> Path:
    """The default store file inside :func:`canopy_home`."""
    return canopy_home() / "canopy.db"


def configured_db_url() -> str | None:
    """``CANOPY_DB_URL`` when set (Postgres at scale), else ``None`` (the SQLite file)."""
    return os.environ.get("CANOPY_DB_URL") or None
