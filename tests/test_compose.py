"""The scale-out deployment: docker-compose.yml, the worker's Dockerfile, deploy/ scripts.

No container engine runs here, so the file is checked the way `docker compose config`
would check it: variables interpolated (with every default, as on a bare `up`) and the
result validated against the Compose Specification's JSON schema, committed under
tests/fixtures/ (see its README). Then the rules docs/operations.md promises: pinned
images, loopback-only ports, ordered start-up, the worker built from this repository,
and the search attributes Canopy needs registered by the namespace one-shot.
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import jsonschema
import psycopg
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from canopy.search_attributes import SEARCH_ATTRIBUTES
from canopy.store import drivers
from canopy.store.engine import Store
from tests.engine import TEMPORAL_BIN

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
SCHEMA = Path(__file__).parent / "fixtures" / "compose-spec.json"
NAMESPACE_SCRIPT = ROOT / "deploy" / "temporal" / "setup-namespace.sh"
WORKER = "canopy-worker"
NAMESPACE_ONE_SHOT = "temporal-namespace"

# --- Compose's variable interpolation ----------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


class UnsetVariable(Exception):
    """A ``${VAR:?message}`` whose variable is unset."""


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with Compose's interpolation applied to every string in it (not to keys).

    Supports what the Compose Specification defines: ``$$``, ``$VAR``, ``${VAR}``, and
    ``${VAR<op>arg}`` with ``:-``/``-`` (default), ``:?``/``?`` (required), ``:+``/``+``
    (alternative); the colon forms treat an empty value as unset.
    """
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["bare"]
        op, arg = match["op"] or "", match["arg"] or ""
        current = env.get(name)
        is_set = bool(current) if op.startswith(":") else current is not None
        if op.endswith("-"):
            return current if is_set and current is not None else arg
        if op.endswith("?"):
            if not is_set or current is None:
                raise UnsetVariable(f"{name}: {arg}")
            return current
        if op.endswith("+"):
            return arg if is_set else ""
        return current or ""

    return _VARIABLE.sub(substitute, value)


def raw_compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def compose(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """docker-compose.yml as `docker compose up` sees it in ``env`` (default: empty)."""
    resolved = interpolate(raw_compose(), env or {})
    assert isinstance(resolved, dict)
    return resolved


def services(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    found = compose(env)["services"]
    assert isinstance(found, dict)
    return found


def schema_errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


# --- Interpolation itself ------------------------------------------------------------------


def test_interpolation_follows_compose_rules() -> None:
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d}", env) == "x d  d"
    assert interpolate("$SET ${SET} $$SET ${SET:+alt} ${EMPTY:+alt}", env) == "x x $SET alt "
    assert interpolate({"k": ["${UNSET}", 5]}, env) == {"k": ["", 5]}
    with pytest.raises(UnsetVariable, match="EMPTY: needed"):
        interpolate("${EMPTY:?needed}", env)


# --- The Compose Specification ----------------------------------------------------------


def test_the_compose_file_is_valid_against_the_compose_specification() -> None:
    assert schema_errors(compose()) == []


def test_every_variable_has_a_default() -> None:
    # A bare `docker compose up` must not stop on a required variable.
    compose({})


def test_the_schema_check_rejects_what_compose_would_reject() -> None:
    broken = compose()
    broken["services"][WORKER]["depends_on"]["postgresql"] = {"conditon": "service_healthy"}
    broken["services"]["temporal"]["restart_policy"] = "always"
    errors = schema_errors(broken)
    assert any(error.startswith("services/canopy-worker/depends_on:") for error in errors)
    assert any("restart_policy" in error for error in errors)


# --- The rules of this file ---------------------------------------------------------------


def test_the_topology_is_temporals_postgres_one_plus_canopy() -> None:
    assert set(services()) == {
        "postgresql",
        "temporal-schema",
        "temporal",
        NAMESPACE_ONE_SHOT,
        "temporal-ui",
        WORKER,
    }


def test_every_image_is_pinned_to_a_version() -> None:
    for name, service in services().items():
        if "build" in service and "image" not in service:
            continue
        image = service["image"]
        reference = image.rsplit("/", 1)[-1]
        assert ":" in reference or "@sha256:" in image, f"{name}: {image} is untagged"
        tag = reference.split("@")[0].partition(":")[2]
        assert tag != "latest", f"{name}: {image} is not pinned"
        assert re.match(r"\d+(\.\d+)+", tag), f"{name}: {image} names no version"


def test_every_published_port_listens_on_loopback_by_default() -> None:
    published = 0
    for name, service in services().items():
        for port in service.get("ports", []):
            if isinstance(port, dict):
                host_ip = port.get("host_ip")
            else:
                parts = str(port).split(":")
                host_ip = parts[0] if len(parts) == 3 else None
            assert host_ip == "127.0.0.1", f"{name}: port {port} listens beyond this machine"
            published += 1
    assert published >= 3  # Postgres, the Temporal frontend, the UI


def test_one_variable_opens_every_port_to_other_hosts() -> None:
    for name, service in services({"CANOPY_BIND_ADDRESS": "10.1.2.3"}).items():
        for port in service.get("ports", []):
            assert str(port).startswith("10.1.2.3:"), f"{name}: {port}"


def test_every_dependency_waits_on_a_condition_the_target_can_meet() -> None:
    found = services()
    for name, service in found.items():
        depends_on = service.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{name}: depends_on without conditions"
        for target, rule in depends_on.items():
            assert target in found, f"{name} depends on unknown service {target}"
            condition = rule.get("condition")
            if condition == "service_healthy":
                assert "healthcheck" in found[target], f"{name}: {target} has no healthcheck"
            elif condition == "service_completed_successfully":
                assert str(found[target].get("restart", "no")).startswith("on-failure"), (
                    f"{name}: {target} is not a one-shot"
                )
            else:
                pytest.fail(f"{name} -> {target}: condition {condition!r}")


def test_postgres_and_temporal_report_their_health() -> None:
    found = services()
    for name in ("postgresql", "temporal"):
        assert "healthcheck" in found[name], name


def test_files_mounted_from_the_repository_exist() -> None:
    for name, service in services().items():
        for volume in service.get("volumes", []):
            source = str(volume["source"]) if isinstance(volume, dict) else volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name}: {source} is missing"


def test_the_worker_is_built_from_this_repository_and_reaches_both_databases() -> None:
    worker = services()[WORKER]
    assert worker["build"]["context"] == "."
    assert worker["build"].get("dockerfile", "Dockerfile") == "Dockerfile"
    assert (ROOT / "Dockerfile").is_file()
    env = worker["environment"]
    assert env["CANOPY_HOST"] == worker["hostname"]
    assert env["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert env["CANOPY_DB_URL"] == "postgresql+psycopg://canopy:canopy@postgresql:5432/canopy"
    store_env = services()["postgresql"]["environment"]
    assert (store_env["CANOPY_DB_USER"], store_env["CANOPY_DB_NAME"]) == ("canopy", "canopy")
    assert store_env["CANOPY_DB_PASSWORD"] == "canopy"


def test_the_worker_follows_the_shells_settings() -> None:
    env = {
        "CANOPY_HOST": "build-box",
        "CANOPY_DB_PASSWORD": "s3cret",
        "CANOPY_WORKDIRS": "/home/me/src",
        "CANOPY_TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
    }
    worker = services(env)[WORKER]
    assert worker["environment"]["TEMPORAL_ADDRESS"] == "ns.acct.tmprl.cloud:7233"
    assert "TEMPORAL_API_KEY" in worker["environment"]  # passed through when set
    assert worker["environment"]["CANOPY_HOST"] == worker["hostname"] == "build-box"
    assert ":s3cret@postgresql:" in worker["environment"]["CANOPY_DB_URL"]
    assert services(env)["postgresql"]["environment"]["CANOPY_DB_PASSWORD"] == "s3cret"
    workdirs = [
        v
        for v in worker["volumes"]
        if isinstance(v, dict) and v["source"] == env["CANOPY_WORKDIRS"]
    ]
    assert workdirs and workdirs[0]["target"] == env["CANOPY_WORKDIRS"]


def test_the_namespace_one_shot_registers_canopys_search_attributes() -> None:
    listed = services()[NAMESPACE_ONE_SHOT]["environment"]["CANOPY_SEARCH_ATTRIBUTES"].split()
    assert dict(item.split("=", 1) for item in listed) == SEARCH_ATTRIBUTES


# --- The namespace one-shot's script ---------------------------------------------------------

FAKE_TEMPORAL = """#!{python}
# Stands in for the temporal CLI: namespaces and search attributes live in a JSON file.
import json, sys
from pathlib import Path
state_file = Path({state!r})
state = json.loads(state_file.read_text()) if state_file.exists() else {{"namespaces": {{}}}}
args = sys.argv[1:]
def flag(name):
    return args[args.index(name) + 1]
with open({calls!r}, "a") as calls:
    calls.write(" ".join(args) + "\\n")
assert args[0] == "operator" and flag("--address") == "temporal:7233", args
command = args[1:3]
if command == ["cluster", "health"]:
    sys.exit(0)
spaces = state["namespaces"]
if command == ["namespace", "describe"]:
    sys.exit(0 if flag("--namespace") in spaces else 1)
if command == ["namespace", "create"]:
    spaces[flag("--namespace")] = {{"retention": flag("--retention"), "attributes": {{}}}}
elif command == ["search-attribute", "list"]:
    for name, kind in spaces[flag("--namespace")]["attributes"].items():
        print(f"  {{name}}  {{kind}}")
elif command == ["search-attribute", "create"]:
    attributes = spaces[flag("--namespace")]["attributes"]
    if flag("--name") in attributes:
        sys.exit("already exists")
    attributes[flag("--name")] = flag("--type")
else:
    sys.exit(f"unexpected: {{args}}")
state_file.write_text(json.dumps(state))
"""


def run_namespace_script(env: Mapping[str, str], path: str) -> subprocess.CompletedProcess[str]:
    one_shot = services()[NAMESPACE_ONE_SHOT]["environment"]
    return subprocess.run(
        ["/bin/sh", str(NAMESPACE_SCRIPT)],
        env={"PATH": path, **one_shot, "SETUP_PAUSE_SECONDS": "0", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_namespace_script_creates_what_is_missing_and_is_safe_to_rerun(
    tmp_path: Path,
) -> None:
    state, calls = tmp_path / "state.json", tmp_path / "calls"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "temporal"
    fake.write_text(FAKE_TEMPORAL.format(python=sys.executable, state=str(state), calls=str(calls)))
    fake.chmod(0o755)
    path = f"{fake_bin}:{os.environ['PATH']}"

    first = run_namespace_script({"TEMPORAL_NAMESPACE": "canopy"}, path)
    assert first.returncode == 0, first.stdout + first.stderr
    namespaces = json.loads(state.read_text())["namespaces"]
    assert namespaces == {"canopy": {"retention": "720h", "attributes": SEARCH_ATTRIBUTES}}

    calls.write_text("")
    again = run_namespace_script({"TEMPORAL_NAMESPACE": "canopy"}, path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(state.read_text())["namespaces"] == namespaces
    assert not [line for line in calls.read_text().splitlines() if " create " in line]


def test_the_namespace_script_fails_when_the_server_never_answers(tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "temporal").write_text("#!/bin/sh\nexit 1\n")
    (fake_bin / "temporal").chmod(0o755)
    result = run_namespace_script({"SETUP_ATTEMPTS": "2"}, f"{fake_bin}:{os.environ['PATH']}")
    assert result.returncode != 0
    assert "gave up after 2 attempts: operator cluster health" in result.stderr


@pytest.mark.server
async def test_the_namespace_script_works_with_the_real_temporal_cli(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Against the dev server, with the `temporal` CLI admin-tools also ships: a namespace
    of its own (search attributes are per namespace on SQL visibility) gets all three."""
    address = temporal_env.client.service_client.config.target_host
    link = tmp_path / "bin"
    link.mkdir()
    (link / "temporal").symlink_to(TEMPORAL_BIN)
    namespace = f"compose-test-{os.getpid()}"
    env = {"TEMPORAL_ADDRESS": address, "TEMPORAL_NAMESPACE": namespace}
    path = f"{link}:{os.environ['PATH']}"
    for _ in range(2):  # the second run finds everything in place
        result = await asyncio.to_thread(run_namespace_script, env, path)
        assert result.returncode == 0, result.stdout + result.stderr
    listed = await temporal_env.client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    custom = {
        name: IndexedValueType.Name(kind).removeprefix("INDEXED_VALUE_TYPE_").title()
        for name, kind in listed.custom_attributes.items()
    }
    assert custom == SEARCH_ATTRIBUTES


# --- The store database's init script ------------------------------------------------------

STORE_INIT_SCRIPT = ROOT / "deploy" / "postgres" / "10-canopy-store.sh"


@pytest.mark.skipif(
    not os.environ.get("CANOPY_TEST_DB_URL") or shutil.which("psql") is None,
    reason="needs CANOPY_TEST_DB_URL (a Postgres superuser) and psql",
)
def test_the_store_init_script_creates_a_database_its_user_owns() -> None:
    """What the postgres image runs on first start, run here against CI's Postgres: the
    new user can create Canopy's tables in the new database, and nothing else is needed."""
    server = urlsplit(os.environ["CANOPY_TEST_DB_URL"])
    suffix = os.getpid()
    name, user = f"canopy_init_{suffix}", f"canopy_init_user_{suffix}"
    secret = "it's a 'quoted' secret"
    admin = psycopg.connect(
        drivers.target_of(server._replace(path="/postgres").geturl()).address, autocommit=True
    )
    try:
        result = subprocess.run(
            ["/bin/sh", str(STORE_INIT_SCRIPT)],
            env={
                "PATH": os.environ["PATH"],
                "PGHOST": server.hostname or "127.0.0.1",
                "PGPORT": str(server.port or 5432),
                "PGPASSWORD": unquote(server.password or ""),
                "POSTGRES_USER": unquote(server.username or "postgres"),
                "CANOPY_DB_NAME": name,
                "CANOPY_DB_USER": user,
                "CANOPY_DB_PASSWORD": secret,
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        host = server.netloc.rpartition("@")[2]
        login = f"{user}:{quote(secret, safe='')}@{host}"
        store = Store(server._replace(netloc=login, path=f"/{name}").geturl())
        try:
            with store.transaction() as rows:
                (owner,) = rows(
                    "SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = :n",
                    {"n": name},
                )
                assert owner["owner"] == user
                (versions,) = rows("SELECT count(*) AS n FROM alembic_version", {})
                assert versions["n"] == 1
        finally:
            store.close()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{user}"')
        admin.close()


# --- The worker's Dockerfile ----------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    pairs = []
    for line in logical:
        instruction, _, arguments = line.strip().partition(" ")
        pairs.append((instruction.upper(), arguments.strip()))
    return pairs


def test_the_dockerfile_starts_from_a_pinned_python_that_canopy_supports() -> None:
    bases = [
        arguments for instruction, arguments in dockerfile_instructions() if instruction == "FROM"
    ]
    assert len(bases) == 1
    match = re.fullmatch(r"python:(\d+\.\d+\.\d+)-[a-z]+-[a-z]+(@sha256:[0-9a-f]{64})?", bases[0])
    assert match, f"{bases[0]} is not a pinned python release"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert match[1] in SpecifierSet(project["requires-python"])


def test_the_dockerfile_installs_only_pinned_versions() -> None:
    installs = [
        arguments
        for instruction, arguments in dockerfile_instructions()
        if instruction == "RUN" and "pip install" in arguments
    ]
    assert installs
    for arguments in installs:
        for command in re.split(r"&&|;", arguments):
            if "pip install" in command:
                assert "-c constraints.txt" in command, command
    copied = " ".join(a for i, a in dockerfile_instructions() if i == "COPY")
    assert "constraints.txt" in copied


def test_the_image_installs_the_agent_clis_the_tests_ran() -> None:
    """The CLIs come from the lock file the tests install from (``npm ci``), never from
    names and versions restated in the Dockerfile, which drifted from the tested ones."""
    instructions = dockerfile_instructions()
    copied = " ".join(a for i, a in instructions if i == "COPY")
    assert "package.json" in copied and "package-lock.json" in copied
    npm = [a for i, a in instructions if i == "RUN" and "npm " in a]
    assert npm and all("npm ci" in a and "npm install" not in a for a in npm), npm
    assert not re.search(r"@(anthropic-ai|openai|google)/[\w-]+@\d", DOCKERFILE.read_text())


def test_the_image_installs_the_postgres_extra_at_pinned_versions() -> None:
    """The worker reaches the store's Postgres through Canopy's ``postgres`` extra (what
    ``pip install 'canopy[postgres]'`` installs), read from pyproject.toml, not a copy."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pinned = {
        canonicalize_name(line.partition("==")[0])
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    for requirement in extras["postgres"]:
        assert canonicalize_name(Requirement(requirement).name) in pinned, requirement
    assert "canopy[postgres]" in extras["dev"], "make install has the driver the tests use"
    installs = " ".join(a for i, a in dockerfile_instructions() if i == "RUN" and "pip" in a)
    assert "['optional-dependencies']['postgres']" in installs
    assert "psycopg" not in installs, "the driver comes from the extra"


def test_the_dockerfile_runs_the_worker_as_an_unprivileged_user() -> None:
    users = [
        arguments for instruction, arguments in dockerfile_instructions() if instruction == "USER"
    ]
    assert users, "the image runs as root"
    assert users[-1].split(":")[0] not in {"root", "0"}
    instructions = dockerfile_instructions()
    entry = [json.loads(a) for i, a in instructions if i in {"ENTRYPOINT", "CMD"}]
    assert entry == [["canopy"], ["worker"]]  # exec form: SIGTERM reaches the worker


def test_everything_the_dockerfile_copies_is_in_the_build_context() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for instruction, arguments in dockerfile_instructions():
        if instruction != "COPY":
            continue
        *sources, _target = arguments.split()
        for source in sources:
            top = source.rstrip("/").split("/")[0]
            assert (ROOT / source).exists(), f"COPY {source}: no such file"
            assert top not in ignored, f"COPY {source}: excluded by .dockerignore"
