"""What commands read beyond plain option values (no typer import): text the user points
at (``--body-file``, ``--file``; ``-`` is stdin), graph definitions, and arguments that
only make sense together.

One reader for every file input, so each is bounded and decoded the same way: at most
``max_bytes`` are read (``/dev/zero`` or a runaway pipe cannot fill memory), and bytes
that are not UTF-8 are refused naming the first bad byte and its offset, instead of a
``UnicodeDecodeError`` traceback or, on stdin, text silently holding surrogates.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.graphs.parse import STDIN, parse_definition
from canopy.limits import GRAPH_FILE_MAX_BYTES, SPEC_BODY_MAX_BYTES, decode_utf8

if TYPE_CHECKING:
    from pathlib import Path


def read_text(path: Path, option: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of ``path`` (``-``: stdin), given with ``option`` and holding ``what``.

    Refusals name the option and the file (``--body-file -: not valid UTF-8 (byte 0xff at
    offset 3)``) or, when the file cannot be opened, the OS's reason.
    """
    label = f"{option} {path}"
    if str(path) == STDIN:
        data = sys.stdin.buffer.read(max_bytes + 1)
    else:
        try:
            with path.open("rb") as handle:
                data = handle.read(max_bytes + 1)
        except OSError as error:
            raise Refused(f"cannot read {what} {path}: {error.strerror or error}") from error
    if len(data) > max_bytes:
        raise Refused(f"{label}: larger than the {what} limit of {max_bytes} bytes")
    return decode_utf8(data, label)


def read_body(body_file: Path | None, body: str | None) -> str | None:
    """The body from ``--body`` or ``--body-file`` (``-`` is stdin); refuses both at once."""
    if body_file is not None and body is not None:
        raise Refused("give either --body or --body-file, not both")
    if body_file is None:
        return body
    return read_text(body_file, "--body-file", "body file", SPEC_BODY_MAX_BYTES)


def new_body(body_file: Path | None, body: str | None) -> str:
    """``spec create``'s body: :func:`read_body`, which must give one."""
    text = read_body(body_file, body)
    if text is None:
        raise Refused("spec create needs a body: --body TEXT or --body-file PATH ('-' = stdin)")
    return text


def read_definition(file: Path | None, host: str | None = None) -> dict[str, Any]:
    """The definition in ``file`` (``-`` is stdin; none: no fields), parsed by its extension
    or content, with ``host`` set when given. The host is validated with the rest."""
    definition: dict[str, Any] = {}
    if file is not None:
        text = read_text(file, "--file", "graph file", GRAPH_FILE_MAX_BYTES)
        definition = parse_definition(text, str(file))
    if host is not None:
        definition["host"] = host
    return definition


def chosen_group(group: str | None, clear: bool) -> str | None:
    """``queue group``'s GROUP, or ``None`` for ``--clear``: exactly one must be given."""
    if (group is None) == (not clear):
        raise Refused("queue group needs exactly one of GROUP or --clear")
    return None if clear else group
