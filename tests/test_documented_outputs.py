"""The refusals the docs quote are the ones a user gets: each case runs the real CLI in a
fresh data dir, provoking what the docs describe, and matches its one ``error:`` line
against the quote read from the docs (``…`` stands for any text, digits for any digits)."""

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_helpers import canopy_env
from tests.documented import quoted, shape


@dataclass(frozen=True)
class Case:
    """A quote in a doc, and how to provoke it: ``argv`` for ``canopy`` run in a scratch
    dir that ``setup`` prepares; ``stdin`` as bytes (some cases are not UTF-8)."""

    doc: str
    starts: str
    argv: tuple[str, ...]
    stdin: bytes = b""
    setup: Callable[[Path], dict[str, str]] = lambda _scratch: {}


def nested(scratch: Path) -> dict[str, str]:
    """Deeper than Python's parser can go, so the file itself is refused."""
    (scratch / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    return {}


def oversized(name: str) -> Callable[[Path], dict[str, str]]:
    def write(scratch: Path) -> dict[str, str]:
        (scratch / name).write_bytes(b"a" * (1024 * 1024 + 1))
        return {}

    return write


def not_an_object(scratch: Path) -> dict[str, str]:
    (scratch / "arr.json").write_text(json.dumps([{"name": "x"}]))
    return {}


def unreachable_postgres(_scratch: Path) -> dict[str, str]:
    """A Postgres URL on a port nothing listens on (the docs' 5432 may be serving here)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return {"CANOPY_DB_URL": f"postgresql+psycopg://canopy@127.0.0.1:{port}/canopy"}


BROKEN_BODY = "<summary>oops</summary><notes>x</notes>"
CASES = {
    "broken body": Case(
        "cli.md",
        "spec body refused: unknown tag <notes>",
        ("spec", "create", "--name", "broken", "--body", BROKEN_BODY),
    ),
    "no body": Case("cli.md", "spec create needs a body", ("spec", "create", "--name", "x")),
    "both bodies": Case(
        "cli.md",
        "give either --body or --body-file",
        ("spec", "create", "--name", "x", "--body", "b", "--body-file", "-"),
    ),
    "missing body file": Case(
        "cli.md",
        "cannot read body file /nonexistent",
        ("spec", "create", "--name", "x", "--body-file", "/nonexistent"),
    ),
    "body not UTF-8": Case(
        "cli.md",
        "--body-file -: not valid UTF-8",
        ("spec", "create", "--name", "x", "--body-file", "-"),
        stdin=b"<summary\xff>",
    ),
    "oversized body file": Case(
        "cli.md",
        "--body-file big.md: larger than",
        ("spec", "create", "--name", "x", "--body-file", "big.md"),
        setup=oversized("big.md"),
    ),
    "long spec name": Case(
        "cli.md",
        "spec name must be at most 400",
        ("spec", "create", "--name", "n" * 401, "--body", "b"),
    ),
    "missing graph file": Case(
        "cli.md",
        "cannot read graph file /nonexistent.json",
        ("graph", "create", "--file", "/nonexistent.json"),
    ),
    "oversized graph file": Case(
        "cli.md",
        "--file huge.json: larger than",
        ("graph", "create", "--file", "huge.json"),
        setup=oversized("huge.json"),
    ),
    "nested graph file": Case(
        "cli.md",
        "graph file deep.json: nested deeper",
        ("graph", "create", "--file", "deep.json"),
        setup=nested,
    ),
    "graph file not an object": Case(
        "cli.md",
        "graph file arr.json: the definition must be an object",
        ("graph", "create", "--file", "arr.json"),
        setup=not_an_object,
    ),
    "graph syntax on stdin": Case(
        "cli.md",
        "graph definition on stdin: line 2",
        ("graph", "create", "--file", "-"),
        stdin=b'{"name": "x",\n bad}',
    ),
    "unknown spec status": Case(
        "cli.md", "unknown spec status 'done'", ("spec", "list", "--status", "done")
    ),
    "notify with nothing to send": Case(
        "cli.md", "notify needs a --title or a --body", ("notify", "json://127.0.0.1:9/x")
    ),
    "notify to no Apprise URL": Case(
        "cli.md",
        "notify: URL 2 is not one Apprise",
        ("notify", "json://h/x", "nope://t", "--body", "b"),
    ),
    "lanes out of range": Case(
        "cli.md", "lanes: 0 is out of range", ("graph", "run", "any", "--lanes", "0")
    ),
    "store unreachable": Case(
        "configuration.md",
        "cannot open the store at postgresql+psycopg://",
        ("spec", "list"),
        setup=unreachable_postgres,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_documented_refusal_is_the_real_one(case: Case, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    extra = case.setup(scratch)
    done = subprocess.run(
        [sys.executable, "-m", "canopy.cli.main", *case.argv],
        input=case.stdin,
        capture_output=True,
        cwd=scratch,
        env=canopy_env(tmp_path / "home", **extra),
        timeout=120,
        check=False,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    expected = quoted(case.doc, case.starts)
    if "CANOPY_DB_URL" in extra:  # the docs' port is 5432; ours is whatever was free
        expected = expected.replace("5432", "…")
    line = stderr.strip().removeprefix("error: ")
    assert shape(expected).fullmatch(line), f"docs/{case.doc} quotes {expected!r}; real: {line!r}"
