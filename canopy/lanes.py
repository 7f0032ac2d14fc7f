"""A lane's git worktree: made from the target's tip, integrated into the target, removed,
and found again after a crash.

A lane is one spec's checkout: ``<data dir>/worktrees/<graph id>/<lane id>/tree``, a git
worktree of the graph's workdir on a branch of its own (``canopy/<graph>/<spec>-<spec
id>/<lane id>``), with ``lane.json`` beside ``tree`` saying what Canopy made it for. That
file and the branch prefix are how :func:`found_lanes` tells Canopy's worktrees from a
person's: nothing here removes a worktree without both.

Every step may be retried after a crash at any point and ends in the same state:
:func:`open_lane` finds the lane an earlier attempt made, :func:`integrate_lane` first
asks git whether the branch is already in the target, :func:`close_lane` removes what is
left. Git runs without a shell, its arguments built from ids, names cut down to
``[a-z0-9-]`` and commit ids git printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from canopy.errors import Refused
from canopy.paths import canopy_home, inside
from canopy.workdir import SHOWN_DIRTY_PATHS, WorktreeState, worktree_state

BRANCH_PREFIX = "canopy/"
"""Every lane branch starts so; a branch without it is never a lane's."""
LANES_DIR = "worktrees"
"""The lanes' root, in the data dir."""
LANE_FILE = "lane.json"
TREE = "tree"
INTEGRATING = "integrating"
"""Beside ``tree`` while an integration rebases or merges in it: a retried attempt that
finds it undoes what a crash left half-done."""
_SLUG_LENGTH = 40
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}
"""Git never waits for a person: no credential prompt, no editor for a rebase or merge."""
_FALLBACK_IDENTITY = ("-c", "user.name=Canopy", "-c", "user.email=canopy@localhost")
"""Who rewrites the commits of a rebase when the repository names nobody (a fresh
machine): without it git refuses to commit."""

IntegrationMode = Literal["rebase", "merge"]


class GitFailed(RuntimeError):
    """A git command failed in a way no answer covers (the activity is retried)."""


@dataclass(frozen=True)
class Lane:
    """What a lane is for, as ``lane.json`` records it."""

    graph_id: str
    run_id: str
    spec_id: str
    lane_id: str
    branch: str
    workdir: str
    target: str
    """The branch the lane's work is integrated into."""
    base: str = ""
    """The target's tip the lane started from (set once the worktree exists)."""

    @property
    def directory(self) -> Path:
        return lane_directory(self.graph_id, self.lane_id)

    @property
    def tree(self) -> Path:
        return self.directory / TREE


@dataclass(frozen=True)
class Integration:
    """How integrating a lane went: ``integrated`` (``commit`` is the target's new tip;
    ``already`` when an earlier attempt did it), ``conflict`` (the first
    :data:`~canopy.workdir.SHOWN_DIRTY_PATHS` conflicting ``paths`` and their ``count``)
    or ``dirty`` (``where`` has uncommitted changes: the target's checkout, or the lane)."""

    outcome: Literal["integrated", "conflict", "dirty"]
    commit: str | None = None
    already: bool = False
    paths: tuple[str, ...] = ()
    count: int = 0
    where: str | None = None


@dataclass(frozen=True)
class Closed:
    """A lane removed; ``kept_branch`` names its branch when it held commits the target
    does not have, and was kept for a person to look at."""

    kept_branch: str | None


def lanes_root() -> Path:
    """``<data dir>/worktrees``."""
    return canopy_home() / LANES_DIR


def lane_directory(graph_id: str, lane_id: str) -> Path:
    """``<data dir>/worktrees/<graph id>/<lane id>``: ids only, refused if they are not."""
    for value in (graph_id, lane_id):
        if not _ID.match(value):
            raise Refused(f"refusing lane path from {value!r}: not an id")
    return inside(lanes_root(), graph_id, lane_id)


def slug(name: str, fallback: str) -> str:
    """``name`` as a branch name part: lower-case letters, digits and single dashes."""
    cut = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:_SLUG_LENGTH].strip("-")
    return cut or fallback


def branch_name(graph_name: str, spec_name: str, spec_id: str, lane_id: str) -> str:
    """``canopy/<graph>/<spec>-<spec id>/<lane id>``: graph and spec readable, ids unique."""
    for value in (spec_id, lane_id):
        if not _ID.match(value):
            raise Refused(f"refusing lane branch from {value!r}: not an id")
    return (
        f"{BRANCH_PREFIX}{slug(graph_name, 'graph')}/{slug(spec_name, 'spec')}-{spec_id}/{lane_id}"
    )


def _git(cwd: str | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["git", "-C", str(cwd), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **_GIT_ENV},
    )
    if check and result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise GitFailed(f"git {' '.join(args[:2])} in {cwd}: {said[-1] if said else 'failed'}")
    return result


def _tip(cwd: str | Path, ref: str) -> str | None:
    found = _git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return found.stdout.strip() if found.returncode == 0 else None


def _is_ancestor(cwd: str | Path, commit: str, of: str) -> bool:
    return _git(cwd, "merge-base", "--is-ancestor", commit, of, check=False).returncode == 0


def _identity(cwd: str | Path) -> tuple[str, ...]:
    named = _git(cwd, "config", "user.email", check=False).stdout.strip()
    return () if named else _FALLBACK_IDENTITY


def target_branch(workdir: str) -> str:
    """The branch checked out in ``workdir``: what a run of lanes integrates into.
    Refused on a detached ``HEAD``."""
    found = _git(workdir, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if found.returncode != 0:
        raise Refused(
            f"workdir {workdir} has no branch checked out (detached HEAD); lanes integrate "
            "into a branch: check one out"
        )
    return found.stdout.strip()


# --- making a lane ------------------------------------------------------------------------


def open_lane(lane: Lane) -> Lane:
    """The lane's worktree on its branch from the target's current tip; ``lane`` with its
    ``base``. An earlier attempt's lane is found and returned as it is; a half-made one
    (a crash inside ``git worktree add``) is made again. A lane with no ``target`` (a run
    started away from its workdir's host) takes the branch checked out in the workdir."""
    if not lane.target:
        lane = replace(lane, target=target_branch(lane.workdir))
    found = _read_lane(lane.directory)
    if found is not None and _same_lane(found, lane) and _on_branch(found):
        return found
    base = _tip(lane.workdir, f"refs/heads/{lane.target}")
    if base is None:
        raise Refused(f"target branch {lane.target} is gone from {lane.workdir}")
    made = Lane(**{**asdict(lane), "base": base})
    if lane.tree.exists():
        shutil.rmtree(lane.tree)
    _git(lane.workdir, "worktree", "prune")
    lane.directory.mkdir(parents=True, exist_ok=True)
    _write_lane(made)  # first: a crash from here on leaves a lane prune can find
    _git(lane.workdir, "worktree", "add", "-B", lane.branch, str(lane.tree), base)
    return made


def _same_lane(found: Lane, lane: Lane) -> bool:
    return (found.run_id, found.spec_id, found.branch, found.workdir) == (
        lane.run_id,
        lane.spec_id,
        lane.branch,
        lane.workdir,
    )


def _on_branch(lane: Lane) -> bool:
    """Whether the lane's tree is a checkout on its branch."""
    if not lane.tree.is_dir():
        return False
    head = _git(lane.tree, "symbolic-ref", "--quiet", "HEAD", check=False)
    return head.returncode == 0 and head.stdout.strip() == f"refs/heads/{lane.branch}"


def _write_lane(lane: Lane) -> None:
    path = lane.directory / LANE_FILE
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(asdict(lane), indent=2) + "\n", encoding="utf-8")
    scratch.replace(path)


def _read_lane(directory: Path) -> Lane | None:
    """The lane ``lane.json`` in ``directory`` records; ``None`` if it is not a lane's."""
    try:
        data = json.loads((directory / LANE_FILE).read_text(encoding="utf-8"))
        lane = Lane(**data)
    except (OSError, ValueError, TypeError):
        return None
    if not lane.branch.startswith(BRANCH_PREFIX) or lane.directory != directory:
        return None
    return lane


# --- integrating ----------------------------------------------------------------------------


def integrate_lane(lane: Lane, mode: IntegrationMode = "rebase") -> Integration:
    """Put the lane's branch on the target: rebased onto its tip and fast-forwarded
    (``merge``: a merge commit). Nothing is done when the branch is already in the
    target. The target's checkout, wherever it is, moves as ``git merge --ff-only``
    moves it: uncommitted changes there stop the integration (``dirty``) instead."""
    for _ in range(3):  # a commit landing on the target meanwhile: once more on its tip
        target_tip = _tip(lane.workdir, f"refs/heads/{lane.target}")
        branch_tip = _tip(lane.workdir, f"refs/heads/{lane.branch}")
        if target_tip is None or branch_tip is None:
            gone = lane.target if target_tip is None else lane.branch
            raise Refused(f"branch {gone} is gone from {lane.workdir}")
        if _is_ancestor(lane.workdir, branch_tip, target_tip):
            return Integration("integrated", commit=target_tip, already=True)
        _undo_unfinished(lane)
        checkout = _checkout_of(lane.workdir, lane.target)
        for where in (checkout, str(lane.tree)):
            if where is not None:
                state = worktree_state(where)
                if not state.clean:
                    return _dirty(where, state)
        integrating = lane.directory / INTEGRATING
        integrating.touch()
        put = _rebase(lane, target_tip) if mode == "rebase" else _merge(lane, target_tip)
        integrating.unlink()
        if isinstance(put, Integration):
            return put
        if _move_target(lane, checkout, target_tip, put):
            return Integration("integrated", commit=put)
    raise GitFailed(f"target branch {lane.target} kept moving while integrating {lane.branch}")


def _dirty(where: str, state: WorktreeState) -> Integration:
    return Integration(
        "dirty", paths=tuple(state.dirty_paths), count=state.dirty_count, where=where
    )


def _checkout_of(workdir: str, branch: str) -> str | None:
    """The worktree that has ``branch`` checked out, if one has."""
    listing = _git(workdir, "worktree", "list", "--porcelain", "-z").stdout.split("\0")
    path = None
    for field in listing:
        if field.startswith("worktree "):
            path = field.removeprefix("worktree ")
        elif field == f"branch refs/heads/{branch}":
            return path
    return None


def _undo_unfinished(lane: Lane) -> None:
    """Abort the rebase or merge an earlier attempt left in the lane (a crash inside it),
    and put its branch back in the tree: the attempt starts over from the branch. One a
    person started (resolving a conflict by hand) has no :data:`INTEGRATING` marker and
    is left alone: the lane's tree is then dirty, and said to be."""
    integrating = lane.directory / INTEGRATING
    if not integrating.exists():
        return
    for marker in ("rebase-merge", "rebase-apply"):
        path = _git(lane.tree, "rev-parse", "--git-path", marker).stdout.strip()
        if (lane.tree / path).exists():
            _git(lane.tree, "rebase", "--abort", check=False)
    if _tip(lane.tree, "MERGE_HEAD") is not None:
        _git(lane.tree, "merge", "--abort", check=False)
    if not _on_branch(lane):
        _git(lane.tree, "checkout", "--quiet", "--force", lane.branch)
    integrating.unlink()


def _rebase(lane: Lane, onto: str) -> str | Integration:
    """The branch rebased onto ``onto`` (its new tip), or the conflict."""
    rebased = _git(lane.tree, *_identity(lane.tree), "rebase", "--quiet", onto, check=False)
    if rebased.returncode != 0:
        return _conflict(lane, "rebase", rebased)
    tip = _tip(lane.tree, "HEAD")
    assert tip is not None
    return tip


def _merge(lane: Lane, onto: str) -> str | Integration:
    """A merge commit of the branch onto ``onto``, made on a detached ``HEAD`` in the
    lane (the target's first parent stays the target), or the conflict."""
    _git(lane.tree, "checkout", "--quiet", "--detach", onto)
    message = f"Merge {lane.branch}"
    merged = _git(
        lane.tree, *_identity(lane.tree), "merge", "--no-ff", "-m", message, lane.branch,
        check=False,
    )  # fmt: skip
    if merged.returncode != 0:
        return _conflict(lane, "merge", merged)
    tip = _tip(lane.tree, "HEAD")
    assert tip is not None
    return tip


def _conflict(lane: Lane, what: str, failed: subprocess.CompletedProcess[str]) -> Integration:
    """The conflicting paths, once the rebase or merge is aborted; a failure that left no
    conflict is not one, and is raised."""
    listed = _git(lane.tree, "diff", "--name-only", "--diff-filter=U", "-z").stdout
    paths = sorted({path for path in listed.split("\0") if path})
    _git(lane.tree, what, "--abort", check=False)
    if not _on_branch(lane):
        _git(lane.tree, "checkout", "--quiet", lane.branch)
    if not paths:
        said = (failed.stderr.strip() or failed.stdout.strip()).splitlines()
        raise GitFailed(f"git {what} of {lane.branch} failed: {said[-1] if said else '?'}")
    return Integration(
        "conflict", paths=tuple(paths[:SHOWN_DIRTY_PATHS]), count=len(paths), where=str(lane.tree)
    )


def _move_target(lane: Lane, checkout: str | None, old: str, new: str) -> bool:
    """Fast-forward the target from ``old`` to ``new``: in its checkout as ``git merge
    --ff-only`` (which refuses to overwrite local edits), else as a compare-and-swap of
    the ref. ``False`` when the target moved meanwhile."""
    if checkout is None:
        swapped = _git(
            lane.workdir, "update-ref", f"refs/heads/{lane.target}", new, old, check=False
        )
        return swapped.returncode == 0
    if _tip(checkout, "HEAD") != old:
        return False
    moved = _git(checkout, "merge", "--ff-only", "--quiet", new, check=False)
    if moved.returncode != 0:
        if not worktree_state(checkout).clean:
            return False  # the next round finds the tree dirty and says so
        said = (moved.stderr.strip() or moved.stdout.strip()).splitlines()
        raise GitFailed(f"fast-forward of {lane.target} failed: {said[-1] if said else '?'}")
    return True


# --- removing, listing ----------------------------------------------------------------------


def close_lane(lane: Lane) -> Closed:
    """Remove the lane's worktree and ``lane.json``; its branch too, unless it holds
    commits the target does not have (kept, and named). Done again, it does nothing."""
    if lane.tree.exists():
        _git(lane.workdir, "worktree", "remove", "--force", str(lane.tree), check=False)
        if lane.tree.exists():
            shutil.rmtree(lane.tree)
    if Path(lane.workdir).is_dir():
        _git(lane.workdir, "worktree", "prune")
        kept = _settle_branch(lane)
    else:
        kept = None
    (lane.directory / LANE_FILE).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        lane.directory.rmdir()
    with contextlib.suppress(OSError):
        lane.directory.parent.rmdir()  # the graph's directory, once its last lane is gone
    return Closed(kept_branch=kept)


def _settle_branch(lane: Lane) -> str | None:
    tip = _tip(lane.workdir, f"refs/heads/{lane.branch}")
    if tip is None:
        return None
    target = _tip(lane.workdir, f"refs/heads/{lane.target}")
    unintegrated = target is None or not _is_ancestor(lane.workdir, tip, target)
    if unintegrated and tip != lane.base:
        return lane.branch
    _git(lane.workdir, "update-ref", "-d", f"refs/heads/{lane.branch}", tip)
    return None


def found_lanes() -> list[Lane]:
    """Every lane under :func:`lanes_root` that Canopy made (a ``lane.json`` naming a
    ``canopy/`` branch and its own directory), sorted by graph and lane."""
    root = lanes_root()
    if not root.is_dir():
        return []
    lanes = []
    for directory in sorted(root.glob("*/*")):
        if directory.is_dir() and not directory.is_symlink():
            lane = _read_lane(directory)
            if lane is not None:
                lanes.append(lane)
    return lanes
