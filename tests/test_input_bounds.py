"""Hostile input at every front door: exit 1, one ``error:`` line, no traceback, no write.

The CLI runs in-process through its real entry point (:func:`cli.main.run`) with stdin,
stdout and stderr swapped by typer's ``CliRunner.isolation``, so
bytes that are not UTF-8 reach it exactly as a pipe would hand them over. The property
tests throw generated junk at the input parsers (bodies, names, workdirs, groups, graph
files, numbers, nesting); the plain tests pin each case a hostile user actually
measured, plus the escaping of stored names and the last-resort error handler.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import TextContent
from typer.testing import CliRunner

from canopy.cli.main import run
from canopy.cli.mcp_server.server import build_server
from canopy.cli.render import printable
from canopy.errors import Refused
from canopy.limits import (
    GRAPH_FILE_MAX_BYTES,
    HOOK_TIMEOUT_MINUTES,
    MAX_VISITS,
    NESTING_MAX_DEPTH,
    NODE_TIMEOUT_MINUTES,
    NOTIFICATIONS_LIMIT,
    SPEC_BODY_MAX_BYTES,
    WAIT_SECONDS,
    Range,
    nesting_problem,
    range_problem,
)
from canopy.ops import queues, specs
from canopy.paths import inside
from canopy.store.engine import Store
from canopy.workdir import normalize_workdir
from tests.cli_helpers import run_canopy
from tests.conftest import body, snapshot, update

BODY = body("hostile input")
HOSTILE = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# --------------------------------------------------------------------------- harness


@dataclass
class Outcome:
    """What one in-process ``canopy`` invocation returned and printed."""

    code: int
    stdout: str
    stderr: str


def canopy(home: Path, *args: str, stdin: bytes = b"") -> Outcome:
    """``canopy ARGS`` through the real entry point on ``home``, ``stdin`` as raw bytes."""
    env = {"CANOPY_HOME": str(home), "CANOPY_DB_URL": None, "CANOPY_DEBUG": None, "COLUMNS": "200"}
    with CliRunner().isolation(input=stdin, env=env) as (out, err, _):
        code = run(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
        return Outcome(code, out.getvalue().decode(), err.getvalue().decode())


def created_id(home: Path, *args: str, stdin: bytes = b"") -> str:
    """The id of what ``canopy ARGS --json`` created."""
    outcome = canopy(home, *args, "--json", stdin=stdin)
    assert outcome.code == 0, outcome
    created: str = json.loads(outcome.stdout)["id"]
    return created


def assert_one_line_refusal(outcome: Outcome) -> None:
    assert outcome.code == 1, outcome
    assert "Traceback" not in outcome.stdout + outcome.stderr, outcome
    assert outcome.stderr.startswith("error: "), outcome
    assert outcome.stderr.endswith("\n") and outcome.stderr.count("\n") == 1, outcome
    assert not _TERMINAL_CONTROLS.search(outcome.stderr[:-1]), outcome


@dataclass
class World:
    """A data dir with one of everything, and the store's contents to compare against."""

    home: Path
    store: Store
    spec: str
    other_spec: str
    queue: str
    graph: str
    before: dict[str, list[tuple[Any, ...]]]

    def canopy(self, *args: str, stdin: bytes = b"") -> Outcome:
        return canopy(self.home, *args, stdin=stdin)

    def refused(self, *args: str, stdin: bytes = b"") -> str:
        """The refusal line; asserts exit 1, exactly one escaped ``error:`` line on stderr,
        no traceback, and a store exactly as it was."""
        outcome = self.canopy(*args, stdin=stdin)
        assert_one_line_refusal(outcome)
        assert snapshot(self.store) == self.before
        return outcome.stderr.rstrip("\n")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    home = tmp_path / "home"
    home.mkdir()
    spec = created_id(home, "spec", "create", "--name", "a", "--body", BODY)
    other = created_id(home, "spec", "create", "--name", "b", "--body", BODY)
    queue = created_id(home, "queue", "create", "q")
    assert canopy(home, "queue", "add", queue, spec, "--group", "g").code == 0
    definition = json.dumps({"name": "g", "nodes": [{"name": "a", "command": "true"}]})
    graph = created_id(home, "graph", "create", "-f", "-", stdin=definition.encode())
    session = ("session", "new", "--platform", "demo", "--workdir", str(home), "--name", "s")
    assert canopy(home, *session).code == 0
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    yield World(home, store, spec, other, queue, graph, snapshot(store))
    store.close()


def graph_json(**changes: Any) -> bytes:
    """A definition (one command node) with ``changes``; NaN and infinities as Python's
    json writes and reads them."""
    definition: dict[str, Any] = {"name": "g2", "nodes": [{"name": "a", "command": "true"}]}
    definition.update(changes)
    return json.dumps(definition).encode()


# --------------------------------------------------------------------------- strategies

_control = st.one_of(
    st.characters(min_codepoint=0x00, max_codepoint=0x1F),
    st.just("\x7f"),
    st.characters(min_codepoint=0x80, max_codepoint=0x9F),
)
with_control = st.tuples(st.text(max_size=12), _control, st.text(max_size=12)).map("".join)
"""Any text holding at least one C0, DEL or C1 character, anywhere."""

_bad_utf8 = st.sampled_from(
    [b"\xff", b"\xfe", b"\x80", b"\xc3(", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]
)
hostile_bytes = st.one_of(
    st.binary(max_size=300),
    st.tuples(st.integers(0, len(BODY)), st.one_of(_bad_utf8, st.just(b"\x00"))).map(
        lambda cut: BODY.encode()[: cut[0]] + cut[1] + BODY.encode()[cut[0] :]
    ),
)
"""Arbitrary bytes, and a valid body with a byte that is not UTF-8 (or a NUL) inserted."""


def outside_ints(bounds: Range) -> st.SearchStrategy[int]:
    """Whole numbers below or above ``bounds``, up to 400 digits."""
    return st.one_of(
        st.integers(min_value=-(10**400), max_value=math.ceil(bounds.low) - 1),
        st.integers(min_value=math.floor(bounds.high) + 1, max_value=10**400),
    )


def outside_floats(bounds: Range) -> st.SearchStrategy[float]:
    """Floats below or above ``bounds``, infinities and NaN (``-0.0`` is not below 0)."""
    return st.one_of(
        st.floats(max_value=bounds.low, exclude_max=True),
        st.floats(min_value=bounds.high, exclude_min=True),
        st.just(math.nan),
    ).filter(lambda value: not bounds.low <= value <= bounds.high)


def outside(bounds: Range, whole: bool = False) -> st.SearchStrategy[float]:
    """Numbers outside ``bounds``; ``whole`` fields get any float too (their type is int)."""
    floats = st.floats() if whole else outside_floats(bounds)
    return st.one_of(outside_ints(bounds), floats)


def toml_table(header: str, table: dict[str, Any]) -> list[str]:
    """``table`` as TOML lines (``nan``, ``inf`` and exponents are all TOML numbers)."""
    lines = [header]
    for key, value in table.items():
        if isinstance(value, str):
            lines.append(f"{key} = {json.dumps(value)}")
        elif isinstance(value, float) and not math.isfinite(value):
            lines.append(
                f"{key} = {'nan' if math.isnan(value) else ('inf' if value > 0 else '-inf')}"
            )
        else:
            lines.append(f"{key} = {value!r}")
    return lines


# --------------------------------------------------------------------------- properties


@HOSTILE
@given(data=hostile_bytes, through_file=st.booleans())
def test_any_bytes_as_a_body_are_refused_in_one_line(
    world: World, tmp_path: Path, data: bytes, through_file: bool
) -> None:
    if through_file:
        path = tmp_path / "body.md"
        path.write_bytes(data)
        world.refused("spec", "create", "--name", "n", "--body-file", str(path))
    else:
        world.refused("spec", "update", world.spec, "--body-file", "-", stdin=data)


NAME_TARGETS: dict[str, Callable[[World, str], tuple[list[str], bytes]]] = {
    "spec name": lambda w, s: (["spec", "create", "--name", s, "--body", BODY], b""),
    "spec rename": lambda w, s: (["spec", "update", w.spec, "--name", s], b""),
    "spec workdir": lambda w, s: (
        ["spec", "create", "--name", "n", "--body", BODY, "--workdir", s],
        b"",
    ),
    "spec list workdir": lambda w, s: (["spec", "list", "--workdir", s], b""),
    "queue name": lambda w, s: (["queue", "create", f"q{s}"], b""),
    "queue add group": lambda w, s: (["queue", "add", w.queue, w.other_spec, "--group", s], b""),
    "queue set group": lambda w, s: (["queue", "group", w.queue, w.spec, f"g{s}"], b""),
    "session name": lambda w, s: (
        ["session", "new", "--platform", "demo", "--workdir", str(w.home), "--name", s],
        b"",
    ),
    "session workdir": lambda w, s: (["session", "new", "--platform", "demo", "--workdir", s], b""),
    "graph name": lambda w, s: (["graph", "create", "-f", "-"], graph_json(name=s)),
    "graph workdir": lambda w, s: (["graph", "create", "-f", "-"], graph_json(workdir=s)),
    "node name": lambda w, s: (
        ["graph", "edit", w.graph, "-f", "-"],
        json.dumps({"nodes": [{"name": s, "command": "true"}]}).encode(),
    ),
    "ensemble name": lambda w, s: (
        ["graph", "create", "-f", "-"],
        graph_json(
            nodes=[{"name": "a", "ensemble": "e", "prompt": "p"}],
            ensembles={s: [{"platform": "demo"}]},
        ),
    ),
    "hook target name": lambda w, s: (
        ["graph", "edit", w.graph, "-f", "-"],
        json.dumps(
            {"hooks": {"on_completed": [{"target_session_name": s, "prompt": "p"}]}}
        ).encode(),
    ),
    "hook target id": lambda w, s: (
        ["graph", "create", "-f", "-"],
        graph_json(hooks={"on_failed": [{"target_session_id": s, "prompt": "p"}]}),
    ),
}


@settings(HOSTILE, max_examples=100)  # fifteen targets
@given(target=st.sampled_from(sorted(NAME_TARGETS)), text=with_control)
def test_control_characters_in_names_workdirs_and_groups_are_refused(
    world: World, target: str, text: str
) -> None:
    args, stdin = NAME_TARGETS[target](world, text)
    line = world.refused(*args, stdin=stdin)
    assert re.search("control characters|single line|NUL character", line), line


NUMBER_FIELDS: dict[str, tuple[Range, bool]] = {
    "nodes[0].timeout_minutes": (NODE_TIMEOUT_MINUTES, False),
    "nodes[0].max_visits": (MAX_VISITS, True),
    "hooks.on_completed[0].timeout_minutes": (HOOK_TIMEOUT_MINUTES, False),
}
"""Every number a graph definition has: its range, and whether it is a whole number."""


@HOSTILE
@given(field=st.sampled_from(sorted(NUMBER_FIELDS)), toml=st.booleans(), data=st.data())
def test_numbers_out_of_range_in_a_graph_are_refused(
    world: World, field: str, toml: bool, data: st.DataObject
) -> None:
    bounds, whole = NUMBER_FIELDS[field]
    value = data.draw(outside(bounds, whole))
    node: dict[str, Any] = {"name": "a", "command": "true"}
    hook: dict[str, Any] = {"platform": "demo", "prompt": "p"}
    (node if field.startswith("nodes") else hook)[field.rsplit(".", 1)[1]] = value
    if toml:
        lines = ['name = "g2"', *toml_table("[[nodes]]", node)]
        stdin = "\n".join([*lines, *toml_table("[[hooks.on_completed]]", hook)]).encode()
    else:
        stdin = graph_json(nodes=[node], hooks={"on_completed": [hook]})
    line = world.refused("graph", "create", "-f", "-", stdin=stdin)
    assert field in line, line
    assert re.search("out of range|not a finite number|valid integer", line), line


@HOSTILE
@given(option=st.sampled_from(["--limit", "--timeout", "--wait"]), data=st.data())
def test_numbers_out_of_range_as_options_are_refused(
    world: World, option: str, data: st.DataObject
) -> None:
    if option == "--limit":
        args = ["notifications", f"--limit={data.draw(outside_ints(NOTIFICATIONS_LIMIT))}"]
    else:
        seconds = data.draw(outside_floats(WAIT_SECONDS))
        waits = {
            "--timeout": ["graph", "wait", world.graph],
            "--wait": ["session", "send", "s", "hi"],
        }
        args = [*waits[option], f"{option}={seconds!r}"]
    line = world.refused(*args)
    assert option.lstrip("-") in line, line


@HOSTILE
@given(
    depth=st.integers(min_value=NESTING_MAX_DEPTH + 1, max_value=3000),
    opener=st.sampled_from(['{"a": ', "["]),
    where=st.sampled_from(["stdin", "json file", "toml"]),
)
def test_deep_nesting_is_refused(
    world: World, tmp_path: Path, depth: int, opener: str, where: str
) -> None:
    if where == "toml":
        text = 'name = "g2"\nspecs = ' + "[" * depth + "]" * depth
        world.refused("graph", "create", "-f", "-", stdin=text.encode())
        return
    closer = "}" if opener.startswith("{") else "]"
    deep = opener * depth + "1" + closer * depth
    text = '{"name": "g2", "nodes": [{"name": "a", "command": "true"}], "specs": ' + deep + "}"
    if where == "stdin":
        line = world.refused("graph", "create", "-f", "-", stdin=text.encode())
    else:
        path = tmp_path / "deep.json"
        path.write_text(text)
        line = world.refused("graph", "create", "-f", str(path))
    assert f"nested deeper than {NESTING_MAX_DEPTH} levels" in line


@HOSTILE
@given(data=st.binary(max_size=300))
def test_any_bytes_as_a_graph_file_are_refused(world: World, data: bytes) -> None:
    world.refused("graph", "edit", world.graph, "-f", "-", stdin=b"{" + data)
    world.refused("graph", "create", "-f", "-", stdin=data)


@HOSTILE
@given(which=st.integers(min_value=0, max_value=5), at=st.integers(min_value=0, max_value=8))
def test_a_nul_in_any_argument_is_refused(world: World, which: int, at: int) -> None:
    args = ["spec", "create", "--name", "n", "--body", BODY]
    at = min(at, len(args[which]))
    args[which] = args[which][:at] + "\x00" + args[which][at:]
    expected = f"error: argument {which + 1}: contains a NUL character (offset {at})"
    assert world.refused(*args) == expected


# --------------------------------------------------------------------------- measured cases


def test_a_timeout_of_1e308_is_refused_naming_field_value_and_range(world: World) -> None:
    stdin = graph_json(nodes=[{"name": "a", "command": "true", "timeout_minutes": 1e308}])
    assert world.refused("graph", "create", "-f", "-", stdin=stdin) == (
        "error: graph definition refused: nodes[0].timeout_minutes (node a): 1e+308 is out of "
        "range; it must be between 1 and 10080 minutes (7 days)"
    )


def test_the_range_ends_are_accepted(world: World) -> None:
    nodes = [
        {"name": "a", "command": "true", "timeout_minutes": 1, "max_visits": 1},
        {"name": "b", "command": "true", "timeout_minutes": 10080.0, "max_visits": 1000},
    ]
    hooks = {"on_failed": [{"platform": "demo", "prompt": "p", "timeout_minutes": 10080}]}
    created = world.canopy("graph", "create", "-f", "-", stdin=graph_json(nodes=nodes, hooks=hooks))
    assert created.code == 0, created.stderr


def test_invalid_utf8_on_stdin_is_one_line_with_the_byte_and_offset(world: World) -> None:
    data = BODY.encode()[:9] + b"\xff" + BODY.encode()[9:]
    line = world.refused("spec", "create", "--name", "n", "--body-file", "-", stdin=data)
    assert line == "error: --body-file -: not valid UTF-8 (byte 0xff at offset 9)"


def test_invalid_utf8_in_a_real_argument_is_one_line(tmp_path: Path) -> None:
    result = run_canopy(tmp_path / "home", "queue", "create", "q\udcff")  # os: bytes q\xff
    assert (result.code, result.stderr) == (
        1,
        "error: argument 3: not valid UTF-8 (byte 0xff at offset 1)\n",
    )


def test_a_nul_in_a_workdir_is_refused_everywhere(world: World) -> None:
    world.refused("spec", "create", "--name", "n", "--body", BODY, "--workdir", "/tmp/a\x00b")
    with pytest.raises(Refused, match=r"workdir must not contain control characters \(\\x00"):
        normalize_workdir("/tmp/a\x00b")
    with pytest.raises(Refused, match="workdir must not contain control characters"):
        specs.spec_create(world.store, "n", BODY, workdir="/tmp/a\x00b")
    assert snapshot(world.store) == world.before


def test_a_100k_deep_graph_file_is_one_line(tmp_path: Path) -> None:
    """A real process, with the interpreter's own recursion limit and stack."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = run_canopy(tmp_path / "home", "graph", "create", "-f", str(deep))
    assert (result.code, result.stderr) == (
        1,
        f"error: graph file {deep}: nested deeper than 64 levels\n",
    )
    result = run_canopy(tmp_path / "home", "graph", "create", "-f", "-", stdin="{" * 100_000)
    assert result.code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_node_name_that_climbs_out_of_the_log_dir_is_refused(world: World) -> None:
    stdin = graph_json(nodes=[{"name": "x/../../../tmp/y", "command": "true"}])
    line = world.refused("graph", "create", "-f", "-", stdin=stdin)
    assert "nodes[0].name" in line
    assert "letters, digits, '_', '-', '.' and spaces only" in line
    for name in (".", "..", "-rf", "a\\b", "/abs"):
        stdin = graph_json(nodes=[{"name": name, "command": "true"}])
        world.refused("graph", "create", "-f", "-", stdin=stdin)


def test_inside_refuses_a_path_leaving_its_base(tmp_path: Path) -> None:
    assert inside(tmp_path, "logs", "1-build.log") == tmp_path / "logs" / "1-build.log"
    for parts in (("x/../../../tmp/y",), ("/etc/passwd",), ("..",), ("a", "..", "b"), ("a\x00",)):
        with pytest.raises(Refused, match="refusing"):
            inside(tmp_path, *parts)
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(Refused, match="it leaves"):
        inside(tmp_path, "link", "etc")


def test_oversized_bodies_and_graph_files_are_refused(world: World, tmp_path: Path) -> None:
    big = BODY.replace("The goal of it.", "x" * SPEC_BODY_MAX_BYTES)
    line = world.refused("spec", "create", "--name", "n", "--body-file", "-", stdin=big.encode())
    assert (
        line
        == f"error: --body-file -: larger than the body file limit of {SPEC_BODY_MAX_BYTES} bytes"
    )
    with pytest.raises(Refused, match="spec body refused: larger than 1 MiB"):
        specs.spec_create(world.store, "n", big)
    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"#" * (GRAPH_FILE_MAX_BYTES + 1))
    world.refused("graph", "create", "-f", str(huge))


def test_escape_sequences_in_stored_names_print_escaped(world: World) -> None:
    """Rows an older Canopy stored unchecked: every human view shows them escaped."""
    hostile = "\x1b[2J\x1b]0;title\x07[/x]\nnext"
    spec = specs.spec_create(world.store, "placeholder", body("\x1b[2J in the summary"))["id"]
    queue = queues.queue_create(world.store, "placeholder")["id"]
    with world.store.transaction() as rows:
        update(rows, "specs", spec, name=hostile)
        update(rows, "queues", queue, name=hostile)
    shown = printable(hostile)
    assert shown == "\\x1b[2J\\x1b]0;title\\x07[/x]\\nnext"
    for args in (
        ["spec", "list"],
        ["queue", "list"],
        ["queue", "list", queue],
        ["spec", "get", spec],
        ["spec", "update", spec, "--workdir", "/w"],
        ["queue", "add", queue, spec],
    ):
        outcome = world.canopy(*args)
        assert outcome.code == 0, (args, outcome)
        assert not _TERMINAL_CONTROLS.search(outcome.stdout.replace("\n", "")), (args, outcome)
        assert shown in outcome.stdout, (args, outcome)


def test_rich_markup_in_a_name_is_shown_as_typed(world: World) -> None:
    outcome = world.canopy("queue", "create", "[/x] [bold]q :smile:")
    assert outcome.code == 0, outcome
    assert "[/x] [bold]q :smile:" in outcome.stdout


# --------------------------------------------------------------------------- last resort


def test_an_unexpected_error_is_one_line_naming_its_type(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom\n  with a second line")

    monkeypatch.setattr(specs, "spec_get", broken)
    outcome = world.canopy("spec", "get", world.spec)
    assert_one_line_refusal(outcome)
    assert outcome.stderr == (
        "error: internal error: RuntimeError: boom with a second line "
        "(set CANOPY_DEBUG=1 for the traceback)\n"
    )
    monkeypatch.setenv("CANOPY_DEBUG", "1")
    with CliRunner().isolation(env={"CANOPY_HOME": str(world.home)}) as (_, err, _):
        assert run(["spec", "get", world.spec]) == 1
        sys.stderr.flush()
        assert "Traceback" in err.getvalue().decode()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            sqlite3.IntegrityError("UNIQUE constraint failed: queues.name"),
            "error: the store refused the write (another command changed the same record at "
            "the same moment; try again): UNIQUE constraint failed: queues.name\n",
        ),
        (
            sqlite3.OperationalError("database is locked"),
            "error: the store refused the write (another command changed the same record at "
            "the same moment; try again): database is locked\n",
        ),
        (
            sqlite3.OperationalError("disk I/O error"),
            "error: the store could not be used: disk I/O error\n",
        ),
    ],
)
def test_a_store_error_from_a_race_is_one_line(
    world: World, monkeypatch: pytest.MonkeyPatch, error: Exception, expected: str
) -> None:
    def racing(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(queues, "queue_create", racing)
    outcome = world.canopy("queue", "create", "q2")
    assert_one_line_refusal(outcome)
    assert outcome.stderr == expected


async def test_mcp_turns_every_error_into_one_line(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HOME", str(world.home))
    monkeypatch.delenv("CANOPY_DB_URL", raising=False)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise sqlite3.IntegrityError("UNIQUE constraint failed")

    monkeypatch.setattr(queues, "queue_create", broken)
    async with Client(build_server(), mode="auto") as client:
        calls: list[tuple[str, dict[str, Any], str]] = [
            ("queue", {"action": "create", "name": "q2"}, "the store refused the write"),
            (
                "spec_edit",
                {"action": "create", "name": "n\x00", "body": BODY},
                "argument name: contains a NUL",
            ),
            (
                "spec_edit",
                {"action": "create", "name": "n", "body": BODY, "workdir": "/a\udcffb"},
                "not valid UTF-8 (byte 0xff",
            ),
            (
                "spec_edit",
                {"action": "create", "name": "\x1b[2J", "body": BODY},
                "spec name must not contain control characters",
            ),
            (
                "graph_edit",
                {
                    "action": "create",
                    "definition": json.loads(
                        graph_json(nodes=[{"name": "a", "command": "true", "max_visits": 10**30}])
                    ),
                },
                "max_visits",
            ),
            ("session", {"action": "notifications", "limit": 10**30}, "limit: "),
        ]
        for tool, args, expected in calls:
            result = await client.call_tool(tool, args)
            assert result.is_error
            (content,) = result.content
            assert isinstance(content, TextContent)
            assert "\n" not in content.text and "Traceback" not in content.text
            assert expected in content.text, content.text
    assert snapshot(world.store) == world.before


# --------------------------------------------------------------------------- the rules


def test_range_and_nesting_checks_are_exact() -> None:
    assert range_problem(1, NODE_TIMEOUT_MINUTES) is None
    assert range_problem(10_080, NODE_TIMEOUT_MINUTES) is None
    assert range_problem(0.999, NODE_TIMEOUT_MINUTES) is not None
    assert range_problem(math.inf, WAIT_SECONDS) == (
        "inf is not a finite number; it must be between 0 and 604800 seconds (7 days)"
    )
    assert (
        range_problem(10**30, MAX_VISITS)
        == "a 31-digit number is out of range; it must be between 1 and 1000"
    )
    assert nesting_problem({"a": [[{}]]}, max_depth=4) is None
    assert nesting_problem({"a": [[{"b": []}]]}, max_depth=4) == "nested deeper than 4 levels"


@pytest.mark.parametrize(
    ("variable", "raw", "complaint"),
    [
        ("CANOPY_HEARTBEAT_TIMEOUT", "0", "must be a positive whole number, not '0'"),
        ("CANOPY_HEARTBEAT_TIMEOUT", "1e3", "must be a positive whole number, not '1e3'"),
        ("CANOPY_HEARTBEAT_TIMEOUT", "١٢", "must be a positive whole number"),
        ("CANOPY_HEARTBEAT_TIMEOUT", "10" + "0" * 30, "a 32-digit number is out of range"),
        ("CANOPY_SPECS_PER_EXECUTION", "10001", "10001 is out of range"),
    ],
)
def test_run_knobs_from_the_environment_are_bounded(
    variable: str, raw: str, complaint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from canopy.ops.tuning import run_tuning

    monkeypatch.setenv(variable, raw)
    with pytest.raises(Refused) as refused:
        run_tuning()
    assert complaint in str(refused.value)
    assert "\n" not in str(refused.value)
