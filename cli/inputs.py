"""Reading text the user points at: ``--body-file`` and ``--file`` (``-`` is stdin).

One reader for both, so every file input is bounded and decoded the same way: at most
``max_bytes`` are read (``/dev/zero`` or a runaway pipe cannot fill memory), and bytes
that are not UTF-8 are refused naming the first bad byte and its offset, instead of a
``UnicodeDecodeError`` traceback or, on stdin, text silently holding surrogates.
"""

import sys
from pathlib import Path

from canopy.errors import Refused
from canopy.graphs.parse import STDIN
from canopy.limits import decode_utf8


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
