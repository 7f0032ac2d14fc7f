"""``canopy notify`` as a command hook uses it: the real CLI sends through the real
Apprise to a webhook served on 127.0.0.1, and a failed send is one line that names no
URL (Apprise URLs carry tokens) and fails the hook run, as any failing command does."""

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.ops import graphs
from canopy.store.engine import Store
from tests import engine
from tests.cli_helpers import run_canopy
from tests.conftest import make_specs
from tests.engine import make_graph, settle

SECRET = "s3cr3t-t0ken"


class Webhook:
    """An HTTP server on 127.0.0.1 that keeps every JSON body posted to it and answers
    each with ``status``."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 200
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                webhook.received.append(json.loads(self.rfile.read(length)))
                self.send_response(webhook.status)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                """Quiet: the test reads what was received, not the server's log."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def url(self, path: str = "hook") -> str:
        """An Apprise ``json://`` URL to this server, with a token in it as real ones have."""
        return f"json://canopy:{SECRET}@127.0.0.1:{self.port}/{path}"


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    served = Webhook()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def test_a_notification_reaches_a_webhook(webhook: Webhook, tmp_path: Path) -> None:
    sent = run_canopy(tmp_path, "notify", webhook.url(), "--title", "build blocked", "--body", "b")
    assert (sent.code, sent.stdout, sent.stderr) == (0, "sent to json\n", "")
    [received] = webhook.received
    assert (received["title"], received["message"]) == ("build blocked", "b")
    as_json = run_canopy(tmp_path, "notify", webhook.url(), webhook.url(), "--body", "x", "--json")
    assert as_json.json() == {"sent": 2, "services": ["json", "json"]}


def test_a_failed_send_is_one_line_naming_no_url(webhook: Webhook, tmp_path: Path) -> None:
    webhook.status = 500
    failed = run_canopy(tmp_path, "notify", webhook.url(), "--title", "t", "--body", "b")
    assert failed.code == 1
    assert failed.stderr == (
        "error: notify: URL 1 (json) not sent: the service refused it or could not be reached"
        " (the URL is not shown: it may hold a token)\n"
    )
    assert len(webhook.received) == 1, "it was tried"


def test_a_url_apprise_cannot_use_is_refused_before_anything_is_sent(
    webhook: Webhook, tmp_path: Path
) -> None:
    for bad, said in ((f"nope://{SECRET}@x", "scheme nope://"), (SECRET, "no scheme://")):
        refused = run_canopy(tmp_path, "notify", webhook.url(), bad, "--title", "t")
        assert refused.code == 1
        assert f"notify: URL 2 is not one Apprise can send to ({said})" in refused.stderr
        assert SECRET not in refused.stderr + refused.stdout
    assert webhook.received == []
    nothing = run_canopy(tmp_path, "notify", webhook.url())
    assert "error: notify needs a --title or a --body: there is nothing to send" in nothing.stderr


store = engine.home_store
"""The store the worker's activities write: this test's data dir."""


@pytest.mark.server
async def test_a_hook_notifies_and_a_failed_send_fails_its_hook_run(
    serving: Client, store: Store, repo: Path, webhook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipe of docs/graphs.md: ``canopy`` on the worker's PATH, the URL from its
    environment, so the graph and its hook runs never hold it."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NTFY_URL", webhook.url("ok"))
    monkeypatch.setenv("DOWN_URL", webhook.url("down").replace(str(webhook.port), "9"))
    (alpha,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [{"name": "work", "command": "true"}], specs=[alpha])
    notify = (
        'canopy notify "$NTFY_URL" --title "{{graph_name}} completed" --body "{{completed_specs}}"'
    )
    graphs.graph_edit(
        store,
        graph,
        {
            "hooks": {
                "on_completed": [{"command": notify}, {"command": notify.replace("NTFY", "DOWN")}]
            }
        },
    )
    assert (await settle(serving, store, graph))["status"] == "completed"
    [received] = webhook.received
    assert received["title"] == "build completed"
    assert received["message"] == "alpha: alpha summary"
    info = graphs.graph_get(store, graph)
    runs = [(h["status"], h["error"]) for h in info["completion_hook_runs"]]
    assert runs == [("succeeded", None), ("failed", "exit code 1")]
    assert SECRET not in json.dumps(info)
