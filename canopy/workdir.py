"""A workdir: the tag that names it and the state of its git work tree.

Workdir tags are absolute paths, so ``--workdir .`` and the full path mean the same.
Whether a workdir is a git work tree and whether it is clean is asked by ``graph run``'s
launch guard and by the ``check_worktree`` activity between specs; one implementation
serves both.
"""

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from canopy.errors import Refused
from canopy.limits import WORKDIR_MAX_LENGTH, name_problem

if TYPE_CHECKING:
    import subprocess


def normalize_workdir(path: str) -> str:
    """The absolute, normalised form of ``path`` (it need not exist yet).

    Control characters are refused, not normalised: a NUL makes every later file system
    call fail, and a newline or escape sequence would reach the terminal of whoever
    lists the specs or sessions tagged with it.
    """
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


SHOWN_DIRTY_PATHS = 20


@dataclass(frozen=True)
class WorktreeState:
    """The dirty paths of a work tree (first :data:`SHOWN_DIRTY_PATHS`) and their count."""

    dirty_paths: list[str]
    dirty_count: int

    @property
    def clean(self) -> bool:
        """No modified, staged, deleted or untracked path."""
        return self.dirty_count == 0


def _git(workdir: str, *args: str) -> "subprocess.CompletedProcess[bytes]":
    """Run git in ``workdir``. subprocess is imported here, not at the top: the CLI's fast
    lane normalises workdir tags with this module and must not pay for it."""
    import subprocess

    return subprocess.run(["git", "-C", workdir, *args], capture_output=True, check=False)


def require_work_tree(workdir: str) -> None:
    """Refuse a workdir that is not inside a git work tree."""
    result = _git(workdir, "rev-parse", "--is-inside-work-tree")
    if result.returncode != 0 or result.stdout.strip() != b"true":
        raise Refused(f"workdir {workdir} is not a git work tree")


def worktree_state(workdir: str) -> WorktreeState:
    """Dirty paths from ``git status --porcelain -z``, untracked files included."""
    result = _git(workdir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    if result.returncode != 0:
        raise Refused(f"git status failed in {workdir}: {result.stderr.decode().strip()}")
    paths = parse_porcelain_z(result.stdout)
    return WorktreeState(dirty_paths=paths[:SHOWN_DIRTY_PATHS], dirty_count=len(paths))


def parse_porcelain_z(output: bytes) -> list[str]:
    """Paths of ``git status --porcelain=v1 -z`` output (a rename's source is skipped)."""
    paths = []
    fields = output.decode("utf-8", errors="replace").split("\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":
            index += 1  # the rename/copy source follows as its own field
    return paths


def describe_dirty(state: WorktreeState) -> str:
    """``3 dirty paths: a.txt, b.txt, c.txt`` (first paths only, with a count of the rest)."""
    shown = ", ".join(state.dirty_paths)
    more = state.dirty_count - len(state.dirty_paths)
    tail = f" and {more} more" if more > 0 else ""
    noun = "path" if state.dirty_count == 1 else "paths"
    return f"{state.dirty_count} dirty {noun}: {shown}{tail}"
