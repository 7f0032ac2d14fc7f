"""Where Canopy keeps its data: ``CANOPY_HOME`` or the platform's user data dir.

Imported by every CLI command, so the string-returning helpers use ``os.path`` only;
pathlib and platformdirs load when something asks for them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

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


def inside(base: Path, *parts: str) -> Path:
    """``base / part / …``, refused if the result would leave ``base``.

    For every path built from input (names, ids, events): a part that is absolute, holds
    ``..``, a NUL or anything else that resolves outside ``base`` must not pick where
    Canopy writes. The check is lexical and on the resolved path, so a symlink inside
    ``base`` pointing out is refused too.
    """
    from pathlib import Path

    from canopy.errors import Refused

    if any("\x00" in part for part in parts):
        raise Refused(f"refusing a path under {base} from a name holding a NUL character")
    joined = base.joinpath(*parts)
    root = base.resolve()
    target = joined.resolve()
    if not (target == root or target.is_relative_to(root)) or ".." in Path(*parts).parts:
        raise Refused(f"refusing path {joined}: it leaves {base}")
    return joined


OUTPUT_LOG = "output.log"
"""The file in a process's directory (:func:`run_log_dir`, a session turn's) that holds
everything the process printed; ``graph logs`` reads it there."""


def run_log_dir(run_id: str, kind: Literal["nodes", "hooks"], record_id: int) -> Path:
    """``<data dir>/logs/runs/<run>/<kind>/<record id>/``: where one node run's or hook
    run's process keeps its lock, exit status and ``output.log``. Built from ids only,
    never from a node's or hook's name."""
    return inside(canopy_home(), "logs", "runs", run_id, kind, f"{record_id:06d}")


def session_path(session_id: str, *parts: str) -> Path:
    """``<data dir>/sessions/<session id>/…``: a session's transcript and its turns."""
    return inside(canopy_home(), "sessions", session_id, *parts)


def sqlite_path() -> str:
    """The default store file inside the data dir."""
    return os.path.join(home_dir(), "canopy.db")


def configured_db_url() -> str | None:
    """``CANOPY_DB_URL`` when set (Postgres at scale), else ``None`` (the SQLite file)."""
    return os.environ.get("CANOPY_DB_URL") or None
