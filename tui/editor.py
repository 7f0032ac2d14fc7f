"""Writing a spec body in the user's editor, with the TUI suspended meanwhile."""

import os
import shlex
import subprocess
from pathlib import Path

from textual.app import App, SuspendNotSupported

from canopy.backlog.specformat import SECTION_NAMES, render_tagged
from canopy.errors import Refused

NEW_SPEC_BODY = render_tagged({name: f"({name})" for name in SECTION_NAMES})
"""What a new spec's draft starts from: the seven tags, each with a placeholder."""


def editor_argv() -> list[str]:
    """``$VISUAL``, else ``$EDITOR``, else ``vi``, split into words as a shell would
    split them; it is run directly, never by a shell."""
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def edit(app: App[None], draft: Path) -> None:
    """Let the user edit ``draft``: the app gives the terminal to the editor until it
    exits. Without a terminal to give (a headless app) the editor runs without one.
    A failed start or a non-zero exit is refused, naming the draft, which is kept."""
    argv = [*editor_argv(), str(draft)]
    try:
        try:
            with app.suspend():
                code = subprocess.run(argv, check=False).returncode
        except SuspendNotSupported:
            code = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL).returncode
    except OSError as error:
        raise Refused(f"cannot start the editor {argv[0]!r}: {error.strerror}") from error
    if code != 0:
        raise Refused(f"the editor exited with code {code}; nothing saved ({draft} is kept)")
