"""Reading a graph definition from JSON or TOML text.

The format follows the file extension (``.json`` / ``.toml``); without one (stdin, a
tool argument) text starting with ``{`` is JSON and anything else TOML. Syntax errors
become one :class:`Refused` line with the line number, so ``canopy graph create`` points
at the mistake the same way for both formats. So do the parsers' other ways to fail on
hostile text: nesting deep enough to exhaust the recursion limit, and integers longer
than Python converts (``ValueError``). Only syntax is checked here; the meaning of the
fields, and how deep they may nest, is :func:`canopy.graphs.model.validate_definition`'s
job.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import PurePath
from typing import Any

from canopy.errors import Refused
from canopy.limits import NESTING_MAX_DEPTH

STDIN = "-"
"""The file name that means standard input."""

_TOO_DEEP = f"nested deeper than {NESTING_MAX_DEPTH} levels"
_TOO_LONG = f"a number has more than {sys.get_int_max_str_digits()} digits"
_TOML_LOCATION = re.compile(r"(?P<message>.*) \(at line (?P<line>\d+), column \d+\)", re.DOTALL)


class _DuplicateKey(Exception):
    """A JSON object repeats a key (JSON parsers keep the last one silently; we refuse)."""


def parse_definition(text: str, filename: str) -> dict[str, Any]:
    """The definition in ``text`` as a dict; ``filename`` picks the format and names errors."""
    label = "graph definition on stdin" if filename == STDIN else f"graph file {filename}"
    data = _parse_json(text, label) if _is_json(text, filename) else _parse_toml(text, label)
    if not isinstance(data, dict):
        raise Refused(f"{label}: the definition must be an object (a JSON {{...}} or TOML table)")
    return data


def _is_json(text: str, filename: str) -> bool:
    suffix = PurePath(filename).suffix.lower() if filename != STDIN else ""
    if suffix in (".json", ".toml"):
        return suffix == ".json"
    return text.lstrip().startswith("{")


def _parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise Refused(f"{label}: line {error.lineno}: {error.msg}") from None
    except _DuplicateKey as duplicate:
        raise Refused(f"{label}: duplicate key {duplicate.args[0]!r}") from None
    except RecursionError:
        raise Refused(f"{label}: {_TOO_DEEP}") from None
    except ValueError:  # not a syntax error: an integer longer than Python converts
        raise Refused(f"{label}: {_TOO_LONG}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _parse_toml(text: str, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_LOCATION.fullmatch(str(error))
        if found is None:
            raise Refused(f"{label}: {_one_line(str(error))}") from None
        message = " ".join(found["message"].split())
        raise Refused(f"{label}: line {found['line']}: {message}") from None
    except RecursionError:
        raise Refused(f"{label}: {_TOO_DEEP}") from None
    except ValueError:
        raise Refused(f"{label}: {_TOO_LONG}") from None


def _one_line(message: str) -> str:
    return " ".join(message.split())
