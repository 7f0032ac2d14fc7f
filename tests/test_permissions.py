"""The permission level: where it is set, which setting wins, how bad values are refused,
and the waits for the limits a real CLI reports (rate limits back off)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from canopy.errors import Refused
from canopy.ops import graphs, sessions
from canopy.ops.doctor import platform_uses
from canopy.permissions import checked_permissions, nearest
from canopy.platforms import UsageLimit, limit_wait, platform_permissions
from canopy.platforms.base import rate_limit_backoff
from canopy.store.engine import Store
from tests.conftest import snapshot

NOW = datetime(2026, 12, 4, 22, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("CANOPY_HOME", str(path))
    return path


def test_the_nearest_setting_wins_and_workspace_is_the_default() -> None:
    assert nearest(None, None, None) == "workspace"
    assert nearest(None, "read-only", "full") == "read-only"
    assert nearest("cli", "read-only") == "cli"


def test_an_unknown_level_is_refused_naming_the_levels() -> None:
    with pytest.raises(Refused, match=r"unknown permissions 'yolo'; one of workspace, full"):
        checked_permissions("yolo")
    assert checked_permissions(None) is None


def test_config_sets_a_built_in_platforms_level_and_refuses_it_elsewhere(home: Path) -> None:
    (home / "config.toml").write_text(
        '[platforms.claude]\npermissions = "read-only"\n'
        '[platforms.tool]\nargv = ["tool", "{prompt}"]\npermissions = "full"\n'
    )
    assert platform_permissions("claude") == "read-only"
    assert platform_permissions("codex") is None
    from canopy.platforms import get_platform

    with pytest.raises(Refused, match=r"platforms.tool: 'permissions' is not a setting of the"):
        get_platform("tool")
    (home / "config.toml").write_text('[platforms.codex]\npermissions = "everything"\n')
    with pytest.raises(Refused, match=r"platforms.codex.permissions: Input should be"):
        platform_permissions("codex")


def definition(**graph: object) -> dict[str, object]:
    return {
        "name": "perms",
        "permissions": "read-only",
        "nodes": [
            {"name": "plan", "platform": "claude", "prompt": "plan"},
            {"name": "build", "platform": "codex", "prompt": "build", "permissions": "full",
             "on_denial": "fail"},
            {"name": "review", "ensemble": "pair", "prompt": "review"},
        ],
        "ensembles": {"pair": [{"platform": "gemini", "permissions": "cli"},
                               {"platform": "claude"}]},
        "hooks": {"on_failed": [{"platform": "codex", "prompt": "why?"}]},
        **graph,
    }  # fmt: skip


@pytest.mark.store
def test_levels_are_stored_where_set_and_resolved_nearest_first(store: Store) -> None:
    created = graphs.graph_create(store, definition())
    info = graphs.graph_info(store, created["id"])
    assert info.permissions == "read-only"
    assert info.nodes[1]["permissions"] == "full" and info.nodes[1]["on_denial"] == "fail"
    assert info.ensembles["pair"][0]["permissions"] == "cli"
    sessions.session_new(store, "claude", name="pair", workdir=".", permissions="full")
    with store.transaction() as rows:
        uses = {(use.where, use.platform, use.level) for use in platform_uses(rows)}
    assert uses == {
        ("graph perms, node plan", "claude", "read-only"),
        ("graph perms, node build", "codex", "full"),
        ("graph perms, node review (ensemble pair)", "gemini", "cli"),
        ("graph perms, node review (ensemble pair)", "claude", "read-only"),
        ("graph perms, hook on_failed[0]", "codex", "read-only"),
        ("session pair", "claude", "full"),
    }


@pytest.mark.store
def test_an_edit_changes_the_graphs_level(store: Store) -> None:
    created = graphs.graph_create(store, definition())
    graphs.graph_edit(store, created["id"], {"permissions": "workspace"})
    assert graphs.graph_info(store, created["id"]).permissions == "workspace"
    graphs.graph_edit(store, created["id"], {"permissions": None})
    assert graphs.graph_info(store, created["id"]).permissions is None


@pytest.mark.store
@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"permissions": "root"}, "permissions: Input should be 'workspace', 'full'"),
        ({"nodes": [{"name": "x", "command": "ls", "permissions": "full"}]},
         "stall_minutes, permissions and on_denial apply to agent nodes only"),
        ({"nodes": [{"name": "x", "platform": "claude", "prompt": "p", "on_denial": "ignore"}]},
         "on_denial \\(node x\\): Input should be 'warn' or 'fail'"),
        ({"hooks": {"on_failed": [{"command": "true", "permissions": "full"}]}},
         "model, effort, permissions and timeout_minutes apply to agent hooks only"),
    ],
)  # fmt: skip
def test_a_bad_level_is_refused_and_nothing_is_written(
    store: Store, change: dict[str, object], refusal: str
) -> None:
    before = snapshot(store)
    with pytest.raises(Refused, match=refusal):
        graphs.graph_create(store, definition(**change))
    assert snapshot(store) == before


@pytest.mark.store
def test_a_sessions_level_is_stored_and_a_bad_one_refused(store: Store, tmp_path: Path) -> None:
    made = sessions.session_new(store, "codex", workdir=str(tmp_path), permissions="read-only")
    assert made["permissions"] == "read-only"
    before = snapshot(store)
    with pytest.raises(Refused, match="unknown permissions 'none'"):
        sessions.session_new(store, "codex", workdir=str(tmp_path), permissions="none")
    assert snapshot(store) == before


def test_an_api_rate_limit_without_a_reset_backs_off_up_to_an_hour() -> None:
    limit = UsageLimit(None, "API Error: Request rejected (429)", kind="rate")
    waits = [limit_wait(limit, NOW, streak=streak).retry_at - NOW for streak in range(9)]
    assert waits[:4] == [timedelta(minutes=m) for m in (1, 2, 4, 8)]
    assert max(waits) == timedelta(hours=1) == waits[-1]
    assert "an API rate limit with no reset time" in limit_wait(limit, NOW).reason
    assert rate_limit_backoff(-1) == timedelta(minutes=1)
    windowed = UsageLimit(None, "You've hit your usage limit.")
    assert limit_wait(windowed, NOW, streak=3).retry_at == NOW + timedelta(hours=6)


def test_a_reset_under_a_minute_ahead_is_said_to_be_so() -> None:
    soon = limit_wait(UsageLimit(NOW + timedelta(seconds=20), "limit"), NOW)
    assert soon.retry_at == NOW + timedelta(seconds=60)
    assert "is less than a minute ahead" in soon.reason
    assert "too far ahead" not in soon.reason
