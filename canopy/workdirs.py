"""Workdir tags are absolute paths, so ``--workdir .`` and the full path mean the same."""

import os

from canopy.limits import WORKDIR_MAX_LENGTH, name_problem


def normalize_workdir(path: str) -> str:
    """The absolute, normalised form of ``path`` (it need not exist yet).

    Control characters are refused, not normalised: a NUL makes every later file system
    call fail, and a newline or escape sequence would reach the terminal of whoever
    lists the specs or sessions tagged with it.
    """
    from canopy.errors import Refused

    problem = name_problem(path, max_length=None)  # measured below, once absolute
    if problem is not None:
        raise Refused(f"workdir {problem}")
    absolute = os.path.normpath(os.path.abspath(os.path.expanduser(path.strip())))
    if len(absolute) > WORKDIR_MAX_LENGTH:
        raise Refused(
            f"workdir must be at most {WORKDIR_MAX_LENGTH} characters as an absolute path "
            f"(this one has {len(absolute)})"
        )
    return absolute
