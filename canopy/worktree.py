"""Is a workdir a git work tree, and is it clean? (the launch and between-spec guard).

One implementation serves ``graph run``'s launch guard and the ``check_worktree``
activity the run uses between specs.
"""

import subprocess
from dataclasses import dataclass

from canopy.errors import Refused

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


def _git(workdir: str, *args: str) -> subprocess.CompletedProcess[bytes]:
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
