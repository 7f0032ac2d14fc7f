"""The Temporal connection settings: read through ``temporalio.envconfig`` the way the
``temporal`` CLI reads them (``temporal.toml`` profiles, ``TEMPORAL_*`` variables), with
Canopy's defaults for what they leave unset, against the real dev server.
"""

import os
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from canopy.errors import Refused
from canopy.temporal import client as temporal_client
from canopy.temporal import daemon
from tests.cli_helpers import run_canopy

pytestmark = pytest.mark.server


@pytest.fixture
def no_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No connection settings at all (no variables, no ``temporal.toml``); where a
    ``temporal.toml`` written by the test is read from."""
    for name in list(os.environ):
        if name.startswith("TEMPORAL_"):
            monkeypatch.delenv(name)
    config = tmp_path / "temporal.toml"
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    return config


def test_with_nothing_configured_canopy_uses_its_own_server(
    no_settings: Path, canopy_home: Path
) -> None:
    assert temporal_client.address() == "127.0.0.1:7233"
    assert temporal_client.configured_address() is None
    assert daemon.server_managed()


async def test_a_temporal_toml_profile_is_honoured(
    no_settings: Path,
    canopy_home: Path,
    temporal_env: WorkflowEnvironment,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    address = temporal_env.client.service_client.config.target_host
    no_settings.write_text(
        '[profile.default]\naddress = "127.0.0.1:1"\n\n'
        f'[profile.team]\naddress = "{address}"\nnamespace = "team"\n'
    )
    monkeypatch.setenv("TEMPORAL_PROFILE", "team")
    client = await temporal_client.connect()
    assert (client.service_client.config.target_host, client.namespace) == (address, "team")
    assert not daemon.server_managed(), "a server named by a profile is someone else's"


async def test_environment_variables_override_the_profile(
    no_settings: Path,
    canopy_home: Path,
    temporal_env: WorkflowEnvironment,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    address = temporal_env.client.service_client.config.target_host
    no_settings.write_text('[profile.default]\naddress = "127.0.0.1:1"\nnamespace = "team"\n')
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "default")
    client = await temporal_client.connect()
    assert (client.service_client.config.target_host, client.namespace) == (address, "default")
    await client.count_workflows()  # the server answers on that namespace


async def test_an_unreachable_server_is_one_line(
    no_settings: Path, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    with pytest.raises(Refused) as refusal:
        await temporal_client.connect()
    message = str(refusal.value)
    assert message.startswith(
        "cannot reach Temporal at 127.0.0.1:1 (namespace default): start it with "
        "`canopy server start` or `canopy up`, or set TEMPORAL_ADDRESS or a temporal.toml "
        "profile ("
    )
    assert "\n" not in message


async def test_unreadable_settings_are_one_line(
    no_settings: Path, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_PROFILE", "nope")
    with pytest.raises(Refused) as refusal:
        await temporal_client.connect()
    assert str(refusal.value) == (
        "cannot read the Temporal connection settings: Profile 'nope' not found"
    )
    no_settings.write_text("not toml [[\n")
    with pytest.raises(Refused) as refusal:
        await temporal_client.connect()
    assert str(refusal.value).startswith(
        "cannot read the Temporal connection settings: Configuration loading error: TOML "
    )
    assert "\n" not in str(refusal.value)


def test_up_and_down_name_the_setting_that_named_the_server(
    no_settings: Path, tmp_path: Path
) -> None:
    """``canopy down`` (``up`` says it the same way) leaves a configured server alone and
    says which setting named it: a profile, or ``TEMPORAL_ADDRESS`` overriding it."""
    no_settings.write_text('[profile.team]\naddress = "127.0.0.1:1"\n')
    settings = {"TEMPORAL_CONFIG_FILE": str(no_settings), "TEMPORAL_PROFILE": "team"}
    home = tmp_path / "home"
    by_profile = run_canopy(home, "down", env=settings)
    assert (by_profile.code, by_profile.stdout) == (
        0,
        "Worker was not running\n"
        "Left Temporal at 127.0.0.1:1 running (temporal.toml profile team)\n",
    )
    overridden = run_canopy(home, "down", "--json", env={**settings, "TEMPORAL_ADDRESS": "h:2"})
    assert overridden.json()["server"] == {
        "external": True,
        "address": "h:2",
        "source": "TEMPORAL_ADDRESS",
    }
