"""Workdir tags are absolute paths, so ``--workdir .`` and the full path mean the same."""

import os


def normalize_workdir(path: str) -> str:
    """The absolute, normalised form of ``path`` (it need not exist yet)."""
    from canopy.errors import Refused

    if not path.strip():
        raise Refused("workdir must not be empty")
    return os.path.normpath(os.path.abspath(os.path.expanduser(path.strip())))
