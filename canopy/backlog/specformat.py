"""The spec body format: seven tagged sections with markdown inside.

A spec body is ``<summary>``, ``<context>``, ``<goal>``, ``<requirements>``,
``<constraints>``, ``<acceptance>`` and ``<verification>``, each exactly once, in any
order, with only whitespace between them. A section opens at ``<name>`` and closes at the
first ``</name>``; everything in between is the section's markdown, so content may hold
angle brackets, other sections' tags and code fences without escaping.

Tags (rather than markdown headings) make the boundaries unambiguous for agents and
humans alike, which is why writes are strict: a body that does not parse is refused
with one line naming the offending tag. Older heading-format bodies (``## Goal`` ...)
remain readable so existing specs keep working, but they report ``needs_conversion``
and cannot be written anew.

It is stdlib-only and cheap to import: the CLI's spec commands load it on every call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from canopy.errors import Refused
from canopy.limits import SPEC_BODY_MAX_BYTES, text_problem

SECTION_NAMES: tuple[str, ...] = (
    "summary",
    "context",
    "goal",
    "requirements",
    "constraints",
    "acceptance",
    "verification",
)

_PREFIX = "spec body refused: "
_ALL_TAGS = ", ".join(f"<{name}>" for name in SECTION_NAMES)
_EXCERPT_LIMIT = 40

# Anything shaped like an XML-ish tag: optional slash, a name, optional attributes.
# Used only at the top level (between sections) to tell tags apart from stray text.
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9_-]*)((?:[ \t][^<>\n]*)?)>")
# An ATX markdown heading line (CommonMark: up to three spaces of indent, 1-6 hashes).
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


@dataclass(frozen=True)
class SpecBody:
    """A spec body as read: its sections and whether it is still in legacy heading format."""

    sections: dict[str, str]
    needs_conversion: bool


# --------------------------------------------------------------------------- helpers


def _clip(text: str) -> str:
    """One-line excerpt of ``text`` (whitespace collapsed), at most 40 characters.

    Refusals must be a single short line, whatever the offending input looked like.
    """
    flat = " ".join(text.split())
    if len(flat) > _EXCERPT_LIMIT:
        return flat[: _EXCERPT_LIMIT - 1] + "…"
    return flat


def _refuse(detail: str) -> Refused:
    """A body refusal with the common prefix, so every front end words it the same."""
    return Refused(_PREFIX + detail)


def _skip_space(text: str, pos: int) -> int:
    """Index of the first non-whitespace character at or after ``pos``."""
    end = len(text)
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _unknown_tag(token: str, name: str) -> Refused:
    """Refusal for a tag-shaped token that is not one of the seven open tags."""
    hint = " (tags are lowercase, without attributes)" if name.lower() in SECTION_NAMES else ""
    return _refuse(f"unknown tag {_clip(token)}{hint}; the sections are {_ALL_TAGS}")


def _outside_text(text: str, pos: int, previous: str | None) -> Refused:
    """Refusal for non-whitespace text at ``pos`` between (or around) sections.

    The location is named by the nearest landmark a reader can find: the start of the
    body, the next tag, or the last section that closed.
    """
    following = _TAG.search(text, pos + 1)
    region = text[pos : following.start()] if following else text[pos:]
    if previous is None:
        where = "at the start"
    elif following is not None:
        where = f"before {_clip(following.group(0))}"
    else:
        where = f"after <{previous}>"
    return _refuse(f'text outside tags {where}: "{_clip(region)}"')


def _missing(found: Mapping[str, str]) -> Refused | None:
    """Refusal naming every absent section at once, or ``None`` when all are present."""
    absent = [f"<{name}>" for name in SECTION_NAMES if name not in found]
    if not absent:
        return None
    noun = "tag" if len(absent) == 1 else "tags"
    return _refuse(f"missing {noun} {', '.join(absent)}")


def _read_section(text: str, name: str, start: int, end: int) -> tuple[str, int]:
    """Content of the section whose open tag spans ``start:end``, and the index after it.

    The section closes at the first ``</name>``; nothing inside is interpreted.
    """
    closing = f"</{name}>"
    close_at = text.find(closing, end)
    if close_at < 0:
        raise _refuse(f"unclosed tag <{name}> (no {closing})")
    return text[end:close_at].strip(), close_at + len(closing)


# --------------------------------------------------------------------------- tagged format


def parse_tagged(text: str) -> dict[str, str]:
    """Parse a tagged body strictly; raise :class:`Refused` naming the first problem.

    Problems are reported in reading order (text outside tags, unknown tag, stray closing
    tag, duplicate tag, unclosed tag); missing tags are reported only once the whole body
    scanned cleanly, all in one line, so the message always points at the earliest fix.
    """
    sections: dict[str, str] = {}
    previous: str | None = None
    pos = _skip_space(text, 0)
    while pos < len(text):
        tag = _TAG.match(text, pos)
        if tag is None:
            raise _outside_text(text, pos, previous)
        slash, name, attributes = tag.groups()
        if slash:
            raise _refuse(f"stray closing tag {_clip(tag.group(0))} outside any section")
        if attributes or name not in SECTION_NAMES:
            raise _unknown_tag(tag.group(0), name)
        if name in sections:
            raise _refuse(f"duplicate tag <{name}>")
        sections[name], pos = _read_section(text, name, tag.start(), tag.end())
        previous = name
        pos = _skip_space(text, pos)
    problem = _missing(sections)
    if problem is not None:
        raise problem
    return {name: sections[name] for name in SECTION_NAMES}


def validate_for_write(text: str) -> dict[str, str]:
    """Validate a body about to be created or updated; return its sections.

    Stricter than reading: legacy heading bodies are refused (new writes must use the
    tags, so the backlog converges on one format) and ``<summary>`` must be exactly one
    non-empty line, because listings show it as a name's one-line description. The body
    must also be storable text (no NUL, valid Unicode) of at most 1 MiB: every prompt of
    every node carries it, and a database text column is no place for megabytes.
    """
    _check_storable(text)
    try:
        sections = parse_tagged(text)
    except Refused:
        if _looks_legacy(text):
            raise _refuse(
                "heading format (# Summary, ## Goal, ...) can no longer be written; "
                f"rewrite it into the seven tags {_ALL_TAGS}"
            ) from None
        raise
    summary = sections["summary"]
    if not summary:
        raise _refuse("<summary> is empty; it must be exactly one line")
    lines = len(summary.splitlines())
    if lines != 1:
        raise _refuse(f"<summary> must be exactly one line (found {lines} lines)")
    return sections


def _check_storable(text: str) -> None:
    """Refuse a body that is not storable text, or larger than 1 MiB of UTF-8."""
    problem = text_problem(text)
    if problem is not None:
        raise _refuse(problem)
    if len(text) > SPEC_BODY_MAX_BYTES or len(text.encode("utf-8")) > SPEC_BODY_MAX_BYTES:
        raise _refuse(f"larger than 1 MiB ({SPEC_BODY_MAX_BYTES} bytes of UTF-8)")


def render_tagged(sections: Mapping[str, str]) -> str:
    """Render sections as a tagged body in canonical order.

    Sections absent from ``sections`` are left out (a partial conversion still renders);
    content that would not parse back (holding its own closing tag) is refused rather than
    silently producing a body that means something else.
    """
    for name in sections:
        if name not in SECTION_NAMES:
            raise _unknown_tag(f"<{name}>", name)
    blocks: list[str] = []
    for name in SECTION_NAMES:
        if name not in sections:
            continue
        content = sections[name].strip()
        if f"</{name}>" in content:
            raise _refuse(f"<{name}> content contains its own closing tag </{name}>")
        blocks.append(f"<{name}>\n{content}\n</{name}>")
    return "\n\n".join(blocks) + "\n"


# --------------------------------------------------------------------------- legacy headings


def _heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` when ``line`` is an ATX heading, else ``None``."""
    match = _HEADING.fullmatch(line)
    if match is None:
        return None
    return len(match.group(1)), (match.group(2) or "").strip()


def _section_title(title: str) -> str | None:
    """The section a heading title names (case-insensitive, trailing colon allowed)."""
    name = title.rstrip(":").strip().lower()
    return name if name in SECTION_NAMES else None


def _fence_update(line: str, fence: str | None) -> tuple[str | None, bool]:
    """Track fenced code blocks so ``# comments`` inside them are not taken as headings.

    Returns the fence marker still open after ``line`` and whether ``line`` is a fence line.
    """
    match = _FENCE.fullmatch(line)
    if match is None:
        return fence, False
    marker, rest = match.groups()
    if fence is None:
        if marker[0] == "`" and "`" in rest:
            return None, False  # CommonMark: a backtick fence's info string has no backticks
        return marker, True
    if marker[0] == fence[0] and len(marker) >= len(fence) and not rest.strip():
        return None, True
    return fence, True


def _legacy_sections(text: str) -> dict[str, str]:
    """Extract sections from a heading-format body.

    A section runs from its heading to the next heading of the same or a higher level,
    or to the next section heading at any level; deeper headings stay inside it as
    content. A repeated section heading appends to the earlier one so nothing is lost.
    """
    collected: dict[str, list[str]] = {}
    current: str | None = None
    level = 0
    fence: str | None = None
    for line in text.splitlines():
        fence_before = fence
        fence, is_fence_line = _fence_update(line, fence)
        heading = None if fence_before is not None or is_fence_line else _heading(line)
        if heading is not None:
            name = _section_title(heading[1])
            if name is not None:
                current, level = name, heading[0]
                if name in collected:
                    collected[name].append("")
                else:
                    collected[name] = []
                continue
            if heading[0] <= level:
                current, level = None, 0
        if current is not None:
            collected[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in collected.items()}


def _looks_legacy(text: str) -> bool:
    """Whether ``text`` is a heading-format body rather than a broken tagged one.

    A body using any of the seven open tags is treated as (broken) tagged, so it gets the
    precise tag refusal instead of a generic "convert your headings" message.
    """
    if any(f"<{name}>" in text for name in SECTION_NAMES):
        return False
    return bool(_legacy_sections(text))


# --------------------------------------------------------------------------- reading


def read_body(text: str) -> SpecBody:
    """Read any stored body without raising: tagged if it parses, else legacy headings.

    Reads must never fail on old data; a body that is not valid tagged format is read
    by its headings (sections without a heading are simply absent) and flagged for
    conversion.
    """
    try:
        return SpecBody(sections=parse_tagged(text), needs_conversion=False)
    except Refused:
        return SpecBody(sections=_legacy_sections(text), needs_conversion=True)


def section_name(name: str) -> str:
    """Normalise a user-typed section name (``Goal``, ``<goal>``) or refuse it."""
    normal = name.strip().strip("<>").strip().lower()
    if normal not in SECTION_NAMES:
        raise Refused(f"unknown section <{_clip(normal)}>; the sections are {_ALL_TAGS}")
    return normal


def section(text: str, name: str) -> str:
    """One section's markdown, for ``spec section ID NAME``.

    Unknown names are refused listing the seven; a section a legacy body lacks is refused
    naming it, since silently printing nothing would look like an empty section.
    """
    wanted = section_name(name)
    body = read_body(text)
    if wanted not in body.sections:
        raise Refused(
            f"spec body has no <{wanted}> section (heading-format body; "
            "rewrite it into the seven tags)"
        )
    return body.sections[wanted]


def summary_line(text: str) -> str:
    """The summary as a single line (``""`` when absent), for name + summary listings.

    Legacy summaries may span lines, so whitespace is collapsed rather than truncated.
    """
    return " ".join(read_body(text).sections.get("summary", "").split())
