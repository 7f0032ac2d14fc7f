"""Workdir tags are absolute paths, so ``--workdir .`` and the full path mean the same."""

import os

WORKDIR_MAX_LENGTH = 4096


def normalize_workdir(path: str) -> str:
    """The absolute, normalised form of ``path`` (it need not exist yet)."""
    from canopy.errors import Refused

    if not path.strip():
        raise Refused("workdir must not be empty")
    absolute = os.path.normpath(os.path.abspath(os.path.expanduser(path.strip())))
    if len(absolute) > WORKDIR_MAX_LENGTH:
        raise Refused(
            f"workdir is {len(absolute)} characters long; the limit is {WORKDIR_MAX_LENGTH}"
        )
    return absolute
