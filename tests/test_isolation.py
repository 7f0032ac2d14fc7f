"""The suite is shielded from the developer's own Temporal connection settings: a
``~/.config/temporalio/temporal.toml`` or ``TEMPORAL_*`` variables in their shell (or the CI
runner's) must not change what any test connects to (see ``tests/conftest.py``)."""

import os
import subprocess
import sys
from pathlib import Path

from canopy.temporal import client as temporal_client

ROOT = Path(__file__).parent.parent


def test_no_temporal_setting_is_inherited() -> None:
    settings = {name: value for name, value in os.environ.items() if name.startswith("TEMPORAL_")}
    assert list(settings) == ["TEMPORAL_CONFIG_FILE"]
    assert not Path(settings["TEMPORAL_CONFIG_FILE"]).exists()
    assert temporal_client.configured_address() is None


def test_a_developers_settings_do_not_reach_the_tests(tmp_path: Path) -> None:
    """The test above, run by a pytest started the way a developer with their own Temporal
    settings would start it."""
    config = tmp_path / ".config" / "temporalio" / "temporal.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[profile.default]\naddress = "10.0.0.1:7233"\napi_key = "secret"\n')
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / ".config"),
        "TEMPORAL_ADDRESS": "10.0.0.2:7233",
        "TEMPORAL_NAMESPACE": "theirs",
        "TEMPORAL_CONFIG_FILE": str(config),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"{__file__}::test_no_temporal_setting_is_inherited",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
