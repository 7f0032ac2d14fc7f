"""Each document's examples create names of their own.

A reader follows README.md's five-minute tour and then another document's examples, in
the same data dir. When two documents create the same name, the second `queue create` is
refused, and a second graph or session of that name makes the name ambiguous (or, through
MCP, the later calls act on the first document's queue). So every name a docs example
creates (queue, graph, session) must be created by one document only; a document may
create its own name twice on purpose (sessions.md reopens a name after closing it).

The names come from the examples as written: shell blocks and `$ ` transcripts
(`canopy queue create`, `canopy session new --name`, `canopy graph create` with the
definition or output the document shows) and MCP call lines. The second test creates them
all with the real CLI in one data dir, the way a reader would.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cli_helpers import canopy_env

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
"""In the order a reader goes: the tour first."""
CANOPY = Path(sys.executable).with_name("canopy")

DEMO_SECTION = "## `canopy demo`"
"""cli.md's description of `make demo`: real demo output, which creates the tour's names
in the demo's own data dir (.demo/home), not in the reader's. Not a docs example."""
HEREDOC = re.compile(r"<<-?'?(?P<end>\w+)'?\n(?P<body>.*?)^(?P=end)$", re.MULTILINE | re.DOTALL)
NAME = r"""("[^"]+"|'[^']+'|[^\s'"|;]+)"""
QUEUE_CREATE = re.compile(rf"\bcanopy queue create {NAME}")
SESSION_NEW = re.compile(rf"\bcanopy session new\b.*?--name[ =]{NAME}")
GRAPH_CREATE = re.compile(r"\bcanopy graph create\b")
GRAPH_CREATED = re.compile(r'^created graph-\w+ +(?P<name>\S.*)$|"name": "(?P<json>[^"]+)"', re.M)
MCP_CALL = re.compile(r"^(?P<tool>queue|graph_edit|session) (?=\{)", re.MULTILINE)


@dataclass(frozen=True)
class Creation:
    """One name a docs example creates."""

    kind: str  # "queue", "graph" or "session"
    name: str
    doc: str  # relative to the repository


def code_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced block of a document, in order, leaving out the
    `canopy demo` section (its transcript has `## ` lines of its own, hence a line scan)."""
    found: list[tuple[str, str]] = []
    section, lang, body = "", None, ""
    for line in text.splitlines(keepends=True):
        if lang is None and line.startswith("## "):
            section = line.strip()
        elif lang is None and line.startswith("```"):
            lang, body = line[3:].strip(), ""
        elif lang is not None and line.strip() == "```":
            if section != DEMO_SECTION:
                found.append((lang, body))
            lang = None
        elif lang is not None:
            body += line
    return found


def commands(lang: str, body: str) -> Iterator[tuple[str, str]]:
    """Each command of a shell block or console transcript, with the output shown after
    it (none in a shell block)."""
    if lang in ("sh", "bash", "shell"):
        yield from ((line, "") for line in body.splitlines())
    elif lang == "console":
        for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            yield command, output


def definitions(blocks: list[tuple[str, str]]) -> list[str]:
    """The names of the graph definitions a document shows (JSON or TOML blocks, and
    heredocs), for a `graph create --file F` whose line and output do not name it."""
    found = []
    texts = [body for lang, body in blocks if lang in ("json", "toml")]
    texts += [m["body"] for _, body in blocks for m in HEREDOC.finditer(body)]
    for shown in texts:
        try:
            parsed: Any = json.loads(shown) if shown.lstrip()[:1] == "{" else tomllib.loads(shown)
        except ValueError:  # JSON or TOML that is not a whole definition
            continue
        if isinstance(parsed, dict) and "name" in parsed and "nodes" in parsed:
            found.append(str(parsed["name"]))
    return found


def mcp_creations(body: str) -> Iterator[tuple[str, str]]:
    """``(kind, name)`` for each MCP call in a block that creates a queue, graph or
    session with a name."""
    for call in MCP_CALL.finditer(body):
        try:
            args, _ = json.JSONDecoder().raw_decode(body, call.end())
        except ValueError:
            continue
        tool, action = call["tool"], args.get("action")
        if tool == "queue" and action == "create":
            yield "queue", args["name"]
        elif tool == "graph_edit" and action == "create":
            yield "graph", args["definition"]["name"]
        elif tool == "session" and action == "new" and "name" in args:
            yield "session", args["name"]


def creations_in(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, name)`` for each creating example in a document, in document order."""
    blocks = code_blocks(text)
    for lang, body in blocks:
        yield from mcp_creations(body)
        for command, output in commands(lang, body):
            if found := QUEUE_CREATE.search(command):
                yield "queue", found[1].strip("'\"")
            if found := SESSION_NEW.search(command):
                yield "session", found[1].strip("'\"")
            if GRAPH_CREATE.search(command):
                named = GRAPH_CREATED.search(command.split("|")[0] + "\n" + output)
                if named:
                    yield "graph", named["name"] or named["json"]
                else:
                    yield from (("graph", name) for name in definitions(blocks))


def all_creations() -> list[Creation]:
    """Every creation in README.md, then docs/*.md sorted: the order a reader goes."""
    return [
        Creation(kind, name, str(doc.relative_to(REPO)))
        for doc in DOCS
        for kind, name in creations_in(doc.read_text())
    ]


def test_no_two_documents_create_the_same_name() -> None:
    """A name two documents create collides when a reader follows both in one data dir."""
    creations = all_creations()
    owner: dict[tuple[str, str], str] = {}
    clashes = []
    for made in dict.fromkeys(creations):  # a document's own repeat is its own business
        first = owner.setdefault((made.kind, made.name), made.doc)
        if first != made.doc:
            clashes.append(f"{made.kind} {made.name!r} is created by {first} and {made.doc}")
    assert not clashes, "\n".join(clashes)

    # The scanner must see the examples at all, or the check above passes on nothing.
    found = {(made.doc, made.kind, made.name) for made in creations}
    tour = {("README.md", "queue", "nightly"), ("README.md", "graph", "build")}
    assert tour | {("README.md", "session", "pair")} <= found, sorted(found)
    docs = {"docs/graphs.md", "docs/sessions.md", "docs/mcp.md", "docs/cli.md"}
    assert docs <= {made.doc for made in creations}, sorted(found)


def canopy(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``canopy`` CLI with ``home`` as its data dir."""
    return subprocess.run(
        [str(CANOPY), *args],
        input=stdin,
        env=canopy_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_documented_names_can_all_be_created_in_one_data_dir(tmp_path: Path) -> None:
    """The docs' creations, one after another in one fresh data dir, each succeed, and each
    name still works as a reference afterwards (a duplicate graph or session would be
    refused as ambiguous)."""
    home, workdir = tmp_path / "home", tmp_path / "app"
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    created: dict[Creation, None] = dict.fromkeys(all_creations())  # a doc's own repeat once
    for made in created:
        if made.kind == "queue":
            done = canopy(home, "queue", "create", made.name)
        elif made.kind == "session":
            new = ["new", "--platform", "demo", "--name", made.name, "--workdir", str(workdir)]
            done = canopy(home, "session", *new)
        else:
            graph = {"name": made.name, "nodes": [{"name": "a", "command": "true"}]}
            done = canopy(home, "graph", "create", "--file", "-", stdin=json.dumps(graph))
        assert done.returncode == 0, f"{made}: {done.stderr}"
    show = {"queue": ("queue", "list"), "graph": ("graph", "info"), "session": ("session", "get")}
    for made in created:
        done = canopy(home, *show[made.kind], made.name)
        assert done.returncode == 0, f"{made}: {done.stderr}"
