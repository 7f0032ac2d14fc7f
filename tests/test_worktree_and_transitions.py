"""Pure pieces of the run engine: porcelain parsing, default transitions, node timeouts."""

from pathlib import Path
from typing import Any

import pytest

from canopy.contracts.graph_run import MAX_NODE_TIMEOUT_MINUTES, node_timeout_minutes
from canopy.graphs.transitions import default_next
from canopy.workdir import describe_dirty, parse_porcelain_z, worktree_state
from tests.engine import git


def test_porcelain_z_paths_include_untracked_and_skip_rename_sources() -> None:
    output = b" M a.txt\0?? new dir/b c.txt\0R  renamed.txt\0original.txt\0D  gone.txt\0"
    assert parse_porcelain_z(output) == ["a.txt", "new dir/b c.txt", "renamed.txt", "gone.txt"]


def test_worktree_state_counts_every_path_and_shows_the_first_twenty(repo: Path) -> None:
    for index in range(25):
        (repo / f"file{index:02}.txt").write_text("x")
    state = worktree_state(str(repo))
    assert state.dirty_count == 25
    assert state.dirty_paths == [f"file{index:02}.txt" for index in range(20)]
    assert describe_dirty(state).endswith("and 5 more")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "all")
    assert worktree_state(str(repo)).clean


def test_default_next_is_the_following_node_skipping_failure_handlers() -> None:
    nodes = [
        {"name": name, "command": "true", **transitions}
        for name, transitions in (
            ("implement", {}),
            ("test", {"on_failure": "fix"}),
            ("fix", {"next": "test"}),
            ("docs", {}),
        )
    ]
    assert default_next(nodes, 0) == "test"
    assert default_next(nodes, 1) == "docs"
    assert default_next(nodes, 3) is None


@pytest.mark.parametrize(
    ("stored", "used"),
    [
        (None, None),
        (30, 30),
        (2.5, 2.5),
        (MAX_NODE_TIMEOUT_MINUTES, MAX_NODE_TIMEOUT_MINUTES),
        (MAX_NODE_TIMEOUT_MINUTES + 1, MAX_NODE_TIMEOUT_MINUTES),
        (1e308, MAX_NODE_TIMEOUT_MINUTES),
        (10**400, MAX_NODE_TIMEOUT_MINUTES),
        (float("inf"), MAX_NODE_TIMEOUT_MINUTES),
        (float("nan"), None),
        (0, None),
        (-5, None),
        (float("-inf"), None),
        (True, None),
        ("30", None),
    ],
)
def test_a_stored_node_timeout_is_clamped_to_what_the_engine_can_use(
    stored: Any, used: float | None
) -> None:
    assert node_timeout_minutes(stored) == used
