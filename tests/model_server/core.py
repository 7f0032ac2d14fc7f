"""What every vendor's scripted server shares: the script, the HTTP plumbing, the network.

A :class:`Script` is the model's side of a conversation, one :data:`Turn` per model
request the CLI makes for the agent's work: tool calls (write a file, run a program), a
final reply, or a vendor's limit answer (a 429 with its headers and body). Requests a CLI
makes for itself (titles, routing, quota probes) are the vendor module's business and do
not take a turn. A script that runs out answers with a plain reply, so a CLI never hangs.

:class:`ModelServer` serves one vendor's :class:`Vendor` on 127.0.0.1 and records each
request, so a test can assert what the CLI sent (a resumed session carries the earlier
turn; a tool result reports a denial).

:class:`LoopbackOnly` is a network namespace with only loopback up (root only; elsewhere
it is the machine's own network). The server listens inside it and the CLIs run inside it
(:meth:`LoopbackOnly.prefix`), so no CLI reaches anything but the scripted model.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import shutil
import subprocess
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class WriteFile:
    """The agent writes ``text`` to ``path`` (relative to its cwd) with its file tool."""

    path: str
    text: str


@dataclass(frozen=True)
class RunCommand:
    """The agent runs ``argv`` (an arbitrary program, not a shell built-in) with its shell
    tool; vendors send ``shlex.join(argv)`` where the tool takes a command line."""

    argv: tuple[str, ...]


@dataclass(frozen=True)
class Say:
    """The model's final reply: the turn ends."""

    text: str


LimitKind = Literal["subscription", "api_rate", "daily_quota", "capacity"]


@dataclass(frozen=True)
class Limit:
    """The vendor's limit answer to this request, as its real API gives it.

    - ``subscription``: a plan's usage window is spent (Claude's 5-hour limit with its
      ``anthropic-ratelimit-unified-*`` headers, Codex's ``usage_limit_reached``);
    - ``api_rate``: an API key's per-minute rate limit (no reset in the body);
    - ``daily_quota``: Gemini's ``RESOURCE_EXHAUSTED`` with a ``RetryInfo`` delay;
    - ``capacity``: Gemini's Code Assist "exhausted your capacity … reset after …".

    ``reset_seconds`` is how far ahead the vendor says the limit resets (``None``: it
    does not say). ``repeat`` answers every later request the same way.
    """

    kind: LimitKind
    reset_seconds: int | None = None
    repeat: bool = True


WRITE = WriteFile("app/x.py", "print('hi')\n")
"""The file write every real-CLI test scripts: one the agent's file tool must make."""
RUN = RunCommand(("python3", "-c", "open('ran.txt', 'w').write('ok')"))
"""The program every real-CLI test scripts: an arbitrary one, not a shell built-in."""

Action = WriteFile | RunCommand
Turn = tuple[Action, ...] | Say | Limit
"""One model answer: tool calls to make (the CLI answers them in its next request), a
final reply, or a limit."""


@dataclass
class Script:
    """The turns the model answers with, in order; thread-safe (a CLI may send requests
    in parallel). After the last turn every request gets :attr:`done`."""

    turns: deque[Turn] = field(default_factory=deque)
    done: Say = field(default_factory=lambda: Say("Done."))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, *turns: Turn) -> Script:
        return cls(deque(turns))

    def next_turn(self) -> Turn:
        """The next scripted turn; a repeating limit stays at the front."""
        with self._lock:
            if not self.turns:
                return self.done
            turn = self.turns[0]
            if not (isinstance(turn, Limit) and turn.repeat):
                self.turns.popleft()
            return turn

    def push(self, *turns: Turn) -> None:
        """Script more turns (the next run's), replacing a repeating limit at the front."""
        with self._lock:
            if self.turns and isinstance(self.turns[0], Limit):
                self.turns.popleft()
            self.turns.extend(turns)


@dataclass(frozen=True)
class Response:
    """One HTTP answer: a JSON body, or server-sent events (``sse``: name and data)."""

    status: int = 200
    body: Any = None
    sse: tuple[tuple[str | None, Any], ...] | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Request:
    """One request the CLI made, as recorded."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Vendor(ABC):
    """One vendor's API: how a request is answered from the script."""

    name: str

    def __init__(self, script: Script) -> None:
        self.script = script

    @abstractmethod
    def answer(self, request: Request) -> Response:
        """The response to one request (taking a turn only for the agent's own work)."""


class ModelServer:
    """A vendor's scripted API on 127.0.0.1 (inside ``network`` when given)."""

    def __init__(self, vendor: Vendor, network: LoopbackOnly | None = None) -> None:
        self.vendor = vendor
        self.requests: list[Request] = []
        handler = _handler_for(self)

        def make() -> ThreadingHTTPServer:
            return ThreadingHTTPServer(("127.0.0.1", 0), handler)

        self._http = network.run_inside(make) if network else make()
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def strings(value: object) -> Iterator[str]:
    """Every string in a JSON value, depth first (to find a prompt or a path in a request)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the recorded requests are the log."""

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = Request(self.command, self.path, dict(self.headers.items()), body)
            server.requests.append(request)
            self._send(server.vendor.answer(request))

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

        def _send(self, response: Response) -> None:
            self.send_response(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            if response.sse is not None:
                payload = b"".join(_sse(name, data) for name, data in response.sse)
                self.send_header("Content-Type", "text/event-stream")
            else:
                payload = b"" if response.body is None else json.dumps(response.body).encode()
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

    return Handler


def _sse(name: str | None, data: Any) -> bytes:
    """One server-sent event: ``event: NAME`` (when named) and its JSON ``data``."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


_CLONE_NEWNET = 0x40000000
_names = itertools.count()


class LoopbackOnly:
    """A network namespace with only ``lo`` up, where the machine lets us make one.

    As root with ``ip`` and ``nsenter`` present, ``ip netns add`` makes it; otherwise
    :attr:`isolated` is false and everything runs in the machine's own network (tests
    still point every CLI at 127.0.0.1).
    """

    def __init__(self) -> None:
        self.name = f"canopy-test-{os.getpid()}-{next(_names)}"
        self.isolated = _can_isolate() and self._create()

    def _create(self) -> bool:
        try:
            subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
            subprocess.run(
                ["ip", "-n", self.name, "link", "set", "lo", "up"], check=True, capture_output=True
            )
        except (OSError, subprocess.CalledProcessError):
            return False
        return True

    @property
    def path(self) -> Path:
        return Path("/run/netns") / self.name

    def prefix(self) -> list[str]:
        """The argv prefix that runs a program inside the namespace (empty if none)."""
        return ["nsenter", f"--net={self.path}", "--"] if self.isolated else []

    def run_inside(self, make: Callable[[], _T]) -> _T:
        """``make()`` on a thread that entered the namespace: sockets it opens live there."""
        if not self.isolated:
            return make()
        made: list[_T] = []
        failed: list[BaseException] = []

        def enter_and_make() -> None:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(self.path, os.O_RDONLY)
            try:
                if libc.setns(fd, _CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns failed")
                made.append(make())
            except BaseException as error:  # handed to the caller's thread
                failed.append(error)
            finally:
                os.close(fd)

        thread = threading.Thread(target=enter_and_make)
        thread.start()
        thread.join()
        if failed:
            raise failed[0]
        return made[0]

    def close(self) -> None:
        if self.isolated:
            subprocess.run(["ip", "netns", "delete", self.name], capture_output=True)


def _can_isolate() -> bool:
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ("ip", "nsenter"))


@contextmanager
def loopback_only() -> Iterator[LoopbackOnly]:
    network = LoopbackOnly()
    try:
        yield network
    finally:
        network.close()
