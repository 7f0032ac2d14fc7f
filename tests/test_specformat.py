"""Tests for the tagged spec body format and its legacy heading fallback."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from canopy.backlog.specformat import (
    SECTION_NAMES,
    SpecBody,
    parse_tagged,
    read_body,
    render_tagged,
    section,
    summary_line,
    validate_for_write,
)
from canopy.errors import Refused

SAMPLE: dict[str, str] = {
    "summary": "Add a retry budget to the runner",
    "context": "The runner retries forever.",
    "goal": "Bound retries.",
    "requirements": "- a budget\n- a counter",
    "constraints": "No new dependencies.",
    "acceptance": "Retries stop after the budget.",
    "verification": "`pytest tests/test_runner.py`",
}

LEGACY = """\
# Retry budget

## Summary
Add a retry budget
to the runner

## Context
The runner retries forever.

### Details
Nested headings stay inside the section.

```python
# Goal  (a comment in a fence, not a heading)
```

## goal:
Bound retries.

## Notes
Not part of any section.
"""


def body(**overrides: str) -> str:
    """A valid tagged body with some sections replaced."""
    return render_tagged({**SAMPLE, **overrides})


def refusal(text: str) -> str:
    """The message parse_tagged refuses ``text`` with (and check it is one line)."""
    with pytest.raises(Refused) as caught:
        parse_tagged(text)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("spec body refused: ")
    return message


# --------------------------------------------------------------------------- parsing


def test_section_names_are_canonical() -> None:
    assert SECTION_NAMES == (
        "summary",
        "context",
        "goal",
        "requirements",
        "constraints",
        "acceptance",
        "verification",
    )


def test_render_is_canonical_and_round_trips() -> None:
    text = render_tagged(dict(reversed(list(SAMPLE.items()))))
    assert text.startswith("<summary>\nAdd a retry budget to the runner\n</summary>\n\n<context>\n")
    assert text.endswith("</verification>\n")
    assert list(parse_tagged(text)) == list(SECTION_NAMES)
    assert parse_tagged(text) == SAMPLE


def test_sections_in_any_order_with_whitespace_between() -> None:
    blocks = [f"<{name}>  {SAMPLE[name]}\n\n</{name}>" for name in reversed(SECTION_NAMES)]
    text = "\n \t" + "\r\n\n".join(blocks) + "\n\n  "
    assert parse_tagged(text) == SAMPLE


@pytest.mark.parametrize(
    "content",
    [
        "a < b and c > d",
        "uses </other> and <other> freely",
        "mentions <goal> and <summary>, even </goal>",
        "```xml\n<summary>\nnot a section\n</summary>\n</verification>\n```",
        "<!-- a comment --> and <br/> and <div class='x'>",
        "# A heading\n\n## Goal\n\ninside context",
    ],
)
def test_context_content_is_opaque(content: str) -> None:
    assert parse_tagged(body(context=content))["context"] == content


def test_section_closes_at_first_own_closing_tag() -> None:
    text = body().replace("</context>", "</context> trailing", 1)
    assert "before <goal>" in refusal(text)


def test_empty_sections_parse() -> None:
    assert parse_tagged(body(context="", goal=""))["goal"] == ""


# --------------------------------------------------------------------------- refusals


def test_unknown_tag() -> None:
    message = refusal(body() + "\n<notes>\nx\n</notes>\n")
    assert "unknown tag <notes>" in message
    assert "<summary>, <context>, <goal>, <requirements>" in message


def test_capitalised_tag_is_unknown_with_hint() -> None:
    message = refusal(body().replace("<summary>", "<Summary>").replace("</summary>", "</Summary>"))
    assert "unknown tag <Summary>" in message
    assert "lowercase" in message


def test_tag_with_attributes_is_unknown() -> None:
    message = refusal(body().replace("<goal>", '<goal id="1">'))
    assert 'unknown tag <goal id="1">' in message


def test_missing_tag() -> None:
    text = render_tagged({k: v for k, v in SAMPLE.items() if k != "goal"})
    assert refusal(text) == "spec body refused: missing tag <goal>"


def test_missing_tags_named_together() -> None:
    text = render_tagged({"summary": "s", "context": "c"})
    assert refusal(text) == (
        "spec body refused: missing tags <goal>, <requirements>, <constraints>, "
        "<acceptance>, <verification>"
    )


def test_empty_body_misses_everything() -> None:
    assert "missing tags <summary>, <context>" in refusal("  \n ")


def test_duplicate_tag() -> None:
    message = refusal(body() + "\n<goal>\nagain\n</goal>\n")
    assert message == "spec body refused: duplicate tag <goal>"


def test_unclosed_tag() -> None:
    text = body().replace("</goal>", "")
    assert refusal(text) == "spec body refused: unclosed tag <goal> (no </goal>)"


def test_text_between_sections() -> None:
    text = body().replace("<context>", "some stray\ntext here\n<context>")
    assert (
        refusal(text)
        == 'spec body refused: text outside tags before <context>: "some stray text here"'
    )


def test_text_at_start() -> None:
    assert 'text outside tags at the start: "Title"' in refusal("Title\n" + body())


def test_text_at_end_is_clipped() -> None:
    message = refusal(body() + "x" * 100)
    assert "text outside tags after <verification>: " in message
    excerpt = message.split(": ", 2)[2].strip('"')
    assert len(excerpt) == 40
    assert excerpt.endswith("…")


def test_stray_closing_tag() -> None:
    message = refusal(body() + "</goal>\n")
    assert message == "spec body refused: stray closing tag </goal> outside any section"


def test_first_problem_in_reading_order_wins() -> None:
    text = "<summary>s</summary>\n<notes>\n" + body().replace("</goal>", "")
    assert "unknown tag <notes>" in refusal(text)


def test_problem_before_missing() -> None:
    assert "stray closing tag </context>" in refusal("<summary>s</summary></context>")


# --------------------------------------------------------------------------- validate_for_write


def test_validate_accepts_valid_body() -> None:
    assert validate_for_write(body()) == SAMPLE


@pytest.mark.parametrize("summary", ["two\nlines", "one\n\nthree"])
def test_validate_refuses_multiline_summary(summary: str) -> None:
    with pytest.raises(Refused, match="<summary> must be exactly one line"):
        validate_for_write(body(summary=summary))


def test_validate_refuses_empty_summary() -> None:
    with pytest.raises(Refused, match="<summary> is empty"):
        validate_for_write(body(summary="  "))


def test_validate_refuses_legacy_body() -> None:
    with pytest.raises(Refused) as caught:
        validate_for_write(LEGACY)
    message = str(caught.value)
    assert "heading format" in message
    assert "rewrite it into the seven tags <summary>" in message


def test_validate_passes_tag_errors_through() -> None:
    with pytest.raises(Refused, match=r"duplicate tag <goal>"):
        validate_for_write(body() + "<goal>x</goal>")


def test_validate_prefers_tag_error_for_broken_tagged_body_with_headings() -> None:
    text = render_tagged({"summary": "s", "context": "## Goal\nx"})
    with pytest.raises(Refused, match=r"missing tags <goal>"):
        validate_for_write(text)


# --------------------------------------------------------------------------- reading


def test_read_tagged_body() -> None:
    assert read_body(body()) == SpecBody(sections=SAMPLE, needs_conversion=False)


def test_read_legacy_body() -> None:
    read = read_body(LEGACY)
    assert read.needs_conversion
    assert set(read.sections) == {"summary", "context", "goal"}
    assert read.sections["summary"] == "Add a retry budget\nto the runner"
    assert read.sections["context"].startswith("The runner retries forever.")
    assert "### Details" in read.sections["context"]
    assert "# Goal  (a comment" in read.sections["context"]
    assert read.sections["goal"] == "Bound retries."


def test_legacy_any_level_and_closing_hashes() -> None:
    read = read_body("###### SUMMARY ######\nS\n# Verification\nrun it\n")
    assert read.sections == {"summary": "S", "verification": "run it"}


def test_read_broken_tagged_body_never_raises() -> None:
    read = read_body("<summary>unclosed")
    assert read == SpecBody(sections={}, needs_conversion=True)


def test_section_on_tagged_and_legacy() -> None:
    assert section(body(), "goal") == "Bound retries."
    assert section(body(), "<Requirements>") == SAMPLE["requirements"]
    assert section(LEGACY, "goal") == "Bound retries."


def test_section_unknown_name() -> None:
    with pytest.raises(Refused) as caught:
        section(body(), "notes")
    assert "unknown section <notes>" in str(caught.value)
    assert "<verification>" in str(caught.value)


def test_section_absent_from_legacy() -> None:
    with pytest.raises(Refused, match="no <acceptance> section"):
        section(LEGACY, "acceptance")


def test_summary_line() -> None:
    assert summary_line(body()) == SAMPLE["summary"]
    assert summary_line(LEGACY) == "Add a retry budget to the runner"
    assert summary_line("no headings at all") == ""


# --------------------------------------------------------------------------- render_tagged


def test_render_refuses_own_closing_tag() -> None:
    with pytest.raises(Refused, match="</goal>"):
        render_tagged({**SAMPLE, "goal": "ends early </goal> oops"})


def test_render_refuses_unknown_section() -> None:
    with pytest.raises(Refused, match="unknown tag <notes>"):
        render_tagged({**SAMPLE, "notes": "x"})


def test_render_partial_for_conversion() -> None:
    sections = read_body(LEGACY).sections
    text = render_tagged(sections)
    assert text.index("<summary>") < text.index("<context>") < text.index("<goal>")
    assert "missing tags <requirements>" in refusal(text)


# --------------------------------------------------------------------------- properties

FRAGMENTS = [
    "<",
    ">",
    "</",
    "</other>",
    "<other>",
    "```",
    "```xml\n<goal>\n</summary>\n```",
    "\n",
    "\n\n",
    "  ",
    "# Heading\n",
    "é",
    "日本語",
    "🌲",
    *[f"<{name}>" for name in SECTION_NAMES],
    *[f"</{name}>" for name in SECTION_NAMES],
]

_raw = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(FRAGMENTS)), max_size=8).map(
    "".join
)


def _clean(name: str, raw: str) -> str:
    """Make ``raw`` legal content for ``name``: no own closing tag, no NUL (a body refuses
    it), stripped, summary one line."""
    closing = f"</{name}>"
    text = raw.replace("\x00", "")
    while True:
        previous = text
        text = text.replace(closing, "")
        if name == "summary":
            text = " ".join(text.splitlines())
        text = text.strip()
        if text == previous:
            return text


def _content(name: str) -> st.SearchStrategy[str]:
    """Arbitrary legal markdown for section ``name``."""
    return _raw.map(lambda raw: _clean(name, raw))


sections_strategy = st.fixed_dictionaries({name: _content(name) for name in SECTION_NAMES})
_space = st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003\u2028", max_size=4)


@given(sections_strategy)
def test_render_parse_round_trip(sections: dict[str, str]) -> None:
    text = render_tagged(sections)
    assert parse_tagged(text) == sections
    assert read_body(text) == SpecBody(sections=sections, needs_conversion=False)


@given(
    sections_strategy, st.permutations(SECTION_NAMES), st.lists(_space, min_size=22, max_size=22)
)
def test_shuffled_round_trip(sections: dict[str, str], order: list[str], spaces: list[str]) -> None:
    gaps = iter(spaces)
    parts = [next(gaps)]
    for name in order:
        parts.append(f"<{name}>{next(gaps)}{sections[name]}{next(gaps)}</{name}>{next(gaps)}")
    assert parse_tagged("".join(parts)) == sections


@given(sections_strategy)
def test_validate_accepts_rendered_bodies_with_summary(sections: dict[str, str]) -> None:
    sections = {**sections, "summary": sections["summary"] or "summary"}
    assert validate_for_write(render_tagged(sections)) == sections


@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(FRAGMENTS)), max_size=12))
def test_arbitrary_text_refuses_cleanly_or_parses(pieces: list[str]) -> None:
    text = "".join(pieces)
    read_body(text)
    summary_line(text)
    try:
        parse_tagged(text)
    except Refused as refused:
        assert "\n" not in str(refused)
        assert len(str(refused)) < 300
