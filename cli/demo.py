"""``make demo`` (``canopy demo``): a guided tour on a scratch data dir.

Every step runs the real ``canopy`` CLI in a subprocess and shows the command first, so
the tour doubles as a copy-and-paste tutorial. The scratch home (``.demo/home`` unless
``--home`` is given) is wiped at the start, so the tour runs the same every time; a
directory the demo did not make is never wiped.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from canopy.backlog.specformat import render_tagged
from canopy.errors import Refused

DEFAULT_HOME = Path(".demo") / "home"
DEMO_MARKER = ".canopy-demo"
"""Marks a data dir the demo made, the only kind it will wipe."""

SPECS = [
    ("Add a login page", "auth", "Users can sign in with email and password."),
    ("Add a logout button", "auth", "Signed-in users can sign out from any page."),
    ("Write the changelog", None, "The changelog lists this week's changes."),
]


def demo_body(summary: str, goal: str) -> str:
    """A small but complete tagged spec body."""
    return render_tagged(
        {
            "summary": summary,
            "context": "A small web app in `app/`; tests live in `tests/`.",
            "goal": goal,
            "requirements": "- Keep the change small.\n- Add a test.",
            "constraints": "No new dependencies.",
            "acceptance": "The new behaviour is covered by a passing test.",
            "verification": "`make test`",
        }
    )


class Tour:
    """Runs and shows CLI steps against one scratch ``CANOPY_HOME``."""

    def __init__(self, home: Path) -> None:
        columns = str(max(shutil.get_terminal_size((120, 24)).columns, 100))
        self.env = {**os.environ, "CANOPY_HOME": str(home.resolve()), "COLUMNS": columns}
        self.env.pop("CANOPY_DB_URL", None)

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        show: bool = True,
        live: bool = False,
        refusal_expected: bool = False,
    ) -> str:
        """Run ``canopy ARGS``; print the command and (when ``show``) its output.

        ``live`` lets the command's stderr (its progress display) through as it happens.
        A step that fails ends the tour with its error, unless it shows off a refusal.
        """
        print(f"\n$ canopy {shlex.join(args)}", flush=True)
        completed = subprocess.run(
            [sys.executable, "-m", "canopy.cli.main", *args],
            input=stdin,
            stdout=subprocess.PIPE,
            stderr=None if live else subprocess.PIPE,
            text=True,
            env=self.env,
        )
        if completed.returncode != 0:
            reason = (completed.stderr or "").strip()
            print(reason)
            if not (refusal_expected and completed.returncode == 1):
                last = reason.splitlines()[-1] if reason else f"exit {completed.returncode}"
                raise Refused(f"demo step `canopy {shlex.join(args)}` failed: {last}")
        if show:
            print(completed.stdout.rstrip())
        return completed.stdout

    def run_git(self, repo: Path, *args: str) -> None:
        """Show a git command and its output (the tour's view of what agents did)."""
        print(f"\n$ git {shlex.join(args)}", flush=True)
        print(subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True).stdout)

    def run_json(self, *args: str, stdin: str | None = None) -> Any:
        """Run a ``--json`` step quietly and return its parsed output."""
        return json.loads(self.run(*args, "--json", stdin=stdin, show=False))


def fresh_scratch_home(home: Path) -> None:
    """Empty ``home`` for the tour; refuses a non-empty directory the demo did not make.

    A previous tour's server and worker are stopped first: wiping their data dir under
    them would orphan them (and keep their ports).
    """
    if home.exists() and any(home.iterdir()) and not (home / DEMO_MARKER).exists():
        raise Refused(f"refusing to wipe {home}: it is not an empty or demo data dir")
    if (home / DEMO_MARKER).exists():
        subprocess.run(
            [sys.executable, "-m", "canopy.cli.main", "down"],
            env={**os.environ, "CANOPY_HOME": str(home.resolve())},
            capture_output=True,
            check=False,
        )
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / DEMO_MARKER).touch()


DEMO_GRAPH: dict[str, Any] = {
    "name": "build",
    "nodes": [
        {
            "name": "implement",
            "platform": "demo",
            "prompt": "{{summary}}\n\nGoal: {{goal}}\nAcceptance: {{acceptance}}",
        },
        {"name": "check", "command": "git log -1 --format=%s | grep -q demo"},
    ],
}
"""A two-node graph: the built-in demo agent edits and commits, a command checks it."""


def scratch_repo(path: Path) -> None:
    """A git work tree with one commit, for the demo graph to work in."""
    path.mkdir()
    identity = ["-c", "user.name=Canopy demo", "-c", "user.email=demo@canopy.invalid"]
    (path / "README.md").write_text("# demo app\n")
    for args in (["init", "-q"], ["add", "README.md"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *identity, *args], cwd=path, check=True, capture_output=True)


def tour(home: Path, port: int, ui_port: int) -> None:
    """The backlog and queues, then a real graph run over the queue on embedded Temporal."""
    fresh_scratch_home(home)
    t = Tour(home)
    print(f"Canopy demo: scratch data dir {home.resolve()}")

    print("\n## 1. A backlog of specs (tagged bodies, optional workdir tag)")
    ids = []
    for name, _group, goal in SPECS:
        created = t.run_json(
            "spec", "create", "--name", name, "--workdir", "/src/app", "--body-file", "-",
            stdin=demo_body(name, goal),
        )  # fmt: skip
        print(f"   created {created['id']}")
        ids.append(created["id"])
    t.run("spec", "list", "--workdir", "/src/app")
    t.run("spec", "section", ids[0][:9], "goal")

    print("\n## 2. A body that does not parse is refused, naming the tag")
    t.run(
        "spec", "create", "--name", "broken", "--body", "<summary>oops</summary><notes>x</notes>",
        refusal_expected=True,
    )  # fmt: skip

    print("\n## 3. A queue with a context group: grouped specs stay together")
    t.run_json("queue", "create", "nightly")
    queue = "nightly"  # queues answer to their name as well as to an id prefix
    t.run("queue", "add", queue, ids[0], "--group", "auth", show=False)
    t.run("queue", "add", queue, ids[2], show=False)
    t.run("queue", "add", queue, ids[1], "--group", "auth")

    print("\n## 4. A reorder that would split the group is refused; nothing changes")
    t.run("queue", "reorder", queue, ids[0], ids[2], ids[1], refusal_expected=True)
    t.run("queue", "reorder", queue, ids[2], ids[0], ids[1])

    print("\n## 5. Admin transitions on standalone specs")
    t.run("spec", "set-status", ids[2], "skip")
    t.run("queue", "list")

    print("\n## 6. Temporal: the embedded dev server and the worker, in the background")
    t.run("up", "--port", str(port), "--ui-port", str(ui_port))

    print("\n## 7. A graph (demo agent + check command) drains the queue in a git repo")
    workdir = home.resolve() / "workdir"
    scratch_repo(workdir)
    graph_file = home / "graph.json"
    graph_file.write_text(json.dumps({**DEMO_GRAPH, "workdir": str(workdir)}, indent=2))
    t.run("graph", "create", "--file", str(graph_file), show=False)
    started = t.run_json("graph", "run", "build", "--queue", queue)
    print(f"   started {started['run_id']} (workflow {started['workflow_id']})")
    t.run("graph", "wait", "build", "--timeout", "300", live=True)
    t.run("graph", "info", "build")
    t.run_git(workdir, "log", "--oneline")

    ui = f"http://localhost:{ui_port}/namespaces/default/workflows/{started['workflow_id']}"
    print(f"\nThe run in the Temporal UI: {ui}")
    print(
        f"Server and worker keep running; stop them with: CANOPY_HOME={home.resolve()} canopy down"
    )
