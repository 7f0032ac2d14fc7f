"""The marker engine: bare ``{{name}}`` markers only, ``(none)`` for missing, shell-safe.

Shell commands in every quoting context: tests/test_shell_markers.py."""

import re
import subprocess

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from canopy.backlog.specformat import SECTION_NAMES
from canopy.errors import Refused
from canopy.graphs.markers import (
    HOOK_MARKERS,
    NODE_MARKERS,
    NONE_VALUE,
    check_template,
    marker_env,
    render,
    render_command,
)

LEFTOVER = re.compile(r"\{\{\s*(" + "|".join(NODE_MARKERS) + r")\s*\}\}")
# Any text a spec name or blocker could hold (argv and env cannot carry NUL; surrogates
# cannot be encoded).
VALUE_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
TEMPLATE_PIECES = st.one_of(
    st.sampled_from(
        [
            "{{",
            "}}",
            "{",
            "}",
            " ",
            "\n",
            "spec_name",
            "node",
            "foo",
            "|",
            ".",
            "-",
            "'",
            "{%",
            "%}",
            "{#",
            "#}",
            "${#x}",
            "{{spec_name}}",
            "{{ node }}",
            "{{ foo }}",
        ]
    ),
    st.text(max_size=4),
)


def test_vocabularies() -> None:
    assert HOOK_MARKERS == (
        "graph_name",
        "workdir",
        "completed_specs",
        "spec_name",
        "spec_id",
        "blocker",
        "node",
    )
    assert (*HOOK_MARKERS, "spec_body", *SECTION_NAMES) == NODE_MARKERS


def test_known_markers_pass_with_or_without_inner_spaces() -> None:
    check_template("Do {{spec_name}} at {{ workdir }}.\n{{goal}}", NODE_MARKERS, "prompt")


def test_unknown_marker_is_refused_with_name_place_and_supported_list() -> None:
    with pytest.raises(Refused) as refusal:
        check_template("hello {{ foo }}", HOOK_MARKERS, "node build prompt")
    assert str(refusal.value) == (
        "unknown marker {{foo}} in node build prompt; supported: graph_name, workdir, "
        "completed_specs, spec_name, spec_id, blocker, node"
    )


def test_node_only_markers_are_unknown_to_hooks() -> None:
    check_template("{{spec_body}}", NODE_MARKERS, "prompt")
    with pytest.raises(Refused, match=r"unknown marker \{\{spec_body\}\}"):
        check_template("{{spec_body}}", HOOK_MARKERS, "hook")


@pytest.mark.parametrize(
    "marker",
    [
        "{{ spec_name|upper }}",
        "{{ spec_name.__class__ }}",
        "{{ spec_name() }}",
        "{{ 'literal' }}",
        "{{ none }}",
        "{{ spec_name ~ node }}",
        "{{- spec_name }}",
        "{{ spec_name -}}",
    ],
)
def test_anything_but_a_bare_name_is_refused_naming_it(marker: str) -> None:
    with pytest.raises(Refused) as refusal:
        check_template(f"a {marker} b", HOOK_MARKERS, "command")
    message = str(refusal.value)
    assert message.startswith(f"unsupported marker {marker} in command: only bare names")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{{ spec_name", "bad marker syntax in hook, line 1"),
        ("line\n{{ }}", "bad marker syntax in hook, line 2"),
        ("a\x00{% raw %}\x00{{spec_name}}", "hook contains a NUL character"),
    ],
)
def test_broken_syntax_is_one_line_naming_the_line(text: str, problem: str) -> None:
    with pytest.raises(Refused) as refusal:
        check_template(text, HOOK_MARKERS, "hook")
    assert str(refusal.value).startswith(problem)
    assert "\n" not in str(refusal.value)


def test_jinja_blocks_comments_and_shell_syntax_are_literal_text() -> None:
    text = 'n=${#x}; {% if x %}{# note #}{%raw%} echo "$((1+2))" }} %} #}\n'
    assert render(text, {}, HOOK_MARKERS) == text


def test_missing_and_none_values_render_exactly_none_marker() -> None:
    rendered = render(
        "{{spec_name}}|{{spec_id}}|{{node}}\n", {"spec_name": None, "node": "test"}, HOOK_MARKERS
    )
    assert rendered == f"{NONE_VALUE}|{NONE_VALUE}|test\n"


def test_values_are_substituted_verbatim_never_rendered_again() -> None:
    rendered = render("[{{blocker}}]", {"blocker": "{{node}} {% if %}"}, HOOK_MARKERS)
    assert rendered == "[{{node}} {% if %}]"


def test_shell_commands_reference_variables_and_missing_values_are_none() -> None:
    rendered = render_command("notify {{spec_name}} {{blocker}}", HOOK_MARKERS, "CANOPY_HOOK_")
    assert rendered == 'notify "${CANOPY_HOOK_SPEC_NAME}" "${CANOPY_HOOK_BLOCKER}"'
    env = marker_env({"spec_name": "a; rm -rf ~"}, "CANOPY_HOOK_")
    assert env == {"CANOPY_HOOK_SPEC_NAME": "a; rm -rf ~"}
    everything = marker_env({m: None for m in HOOK_MARKERS}, "CANOPY_HOOK_")
    assert everything["CANOPY_HOOK_BLOCKER"] == NONE_VALUE


def test_render_refuses_an_unknown_marker_instead_of_leaving_it() -> None:
    with pytest.raises(Refused, match=r"unknown marker \{\{foo\}\} in template"):
        render("{{foo}}", {"foo": "x"}, HOOK_MARKERS)


def test_marker_env_names_and_none() -> None:
    assert marker_env({"spec_name": "Login", "blocker": None}, "CANOPY_HOOK_") == {
        "CANOPY_HOOK_SPEC_NAME": "Login",
        "CANOPY_HOOK_BLOCKER": NONE_VALUE,
    }


@settings(max_examples=150, deadline=None)
@given(value=VALUE_TEXT, marker=st.sampled_from(["spec_name", "blocker"]))
def test_no_value_can_run_anything_in_a_shell_command(value: str, marker: str) -> None:
    assume(re.fullmatch(r"-[neE]+", value) is None)  # echo's own options, not injection
    command = render_command(f"echo {{{{{marker}}}}}", HOOK_MARKERS, "CANOPY_HOOK_")
    env = marker_env({marker: value}, "CANOPY_HOOK_")
    completed = subprocess.run(["bash", "-c", command], env=env, capture_output=True, check=True)
    assert completed.stdout == value.encode() + b"\n"
    assert completed.stderr == b""


@settings(max_examples=300)
@given(
    pieces=st.lists(TEMPLATE_PIECES, max_size=12),
    values=st.dictionaries(st.sampled_from(NODE_MARKERS), st.none() | VALUE_TEXT),
)
def test_rendering_never_leaves_a_known_marker(
    pieces: list[str], values: dict[str, str | None]
) -> None:
    assume(not any("{" in value or "}" in value for value in values.values() if value))
    text = "".join(pieces)
    try:
        rendered = render(text, values, NODE_MARKERS)
    except Refused as refusal:
        assert "\n" not in str(refusal)
        return
    assert LEFTOVER.search(rendered) is None
