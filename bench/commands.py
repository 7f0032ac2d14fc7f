"""How the benchmarks run ``canopy`` commands: in the environment a user's would run in.

Light on purpose (no SQLAlchemy): the first-paint benchmark imports it in its children.
"""

import os
from pathlib import Path


def command_env(home: Path) -> dict[str, str]:
    """This process's environment for commands on the scratch store at ``home``.

    The SQLite store (``CANOPY_DB_URL`` dropped), and
    bytecode cached as an installation caches it: with ``PYTHONDONTWRITEBYTECODE`` set
    (as in some development shells) every run would compile again each module changed
    since its ``.pyc`` was written, a few milliseconds each, which is not what users pay.
    The warm-up round writes them.
    """
    env = {**os.environ, "CANOPY_HOME": str(home)}
    env.pop("CANOPY_DB_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
