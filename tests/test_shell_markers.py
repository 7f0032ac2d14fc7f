"""Markers in shell commands: values travel as environment variables, never as code.

Every rendered command runs for real under ``/bin/sh`` (dash on Debian; dash is added
where it is not) and bash, the way command hooks and command nodes run it (``sh -c``), in
an empty directory. A corpus of
hostile values in every quoting context must come out exactly as written, with nothing
executed (no ``PWNED`` file); hypothesis then tries arbitrary values, and arbitrary
commands assembled from shell syntax. Contexts with no safe rendering are refused when a
graph is created or edited, in one line naming the marker, where it is and why, and
nothing is written.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canopy.errors import Refused
from canopy.graphs.markers import (
    HOOK_ENV_PREFIX,
    HOOK_MARKERS,
    NODE_ENV_PREFIX,
    NODE_MARKERS,
    check_command,
    marker_env,
    render_command,
)
from canopy.ops import graphs
from canopy.store.engine import Store
from tests.conftest import snapshot
from tests.test_graphs import example

SHELLS = ["/bin/sh", "bash"]
if Path("/bin/sh").resolve().name != "dash" and shutil.which("dash"):
    SHELLS.append("dash")  # /bin/sh is bash or another shell here: dash as well
PWNED = "PWNED"
LARGE = ("$(touch PWNED) `touch PWNED` 'a' \"b\" \\c ${HOME} *\n" * 2500)[: 100 * 1024]

PAYLOADS: dict[str, str] = {
    "command substitution": "$(touch PWNED)",
    "backquotes": "`touch PWNED`",
    "semicolon": "x; touch PWNED",
    "and": "x && touch PWNED",
    "or": "false || touch PWNED",
    "newlines": "x\ntouch PWNED\n",
    "single quote": "it's",
    "double quote": 'say "hi"',
    "both quotes": "'\"$(touch PWNED)\"'",
    "quote breakout": "'; touch PWNED; '",
    "double quote breakout": '"; touch PWNED; "',
    "backslashes": "back\\slash\\",
    "variable": "$HOME",
    "braced variable": "${HOME}",
    "arithmetic": "a[$(touch PWNED)]",
    "star": "*",
    "question mark": "?",
    "bracket": "[a]",
    "tilde": "~",
    "bang": "!",
    "percent": "%s %d %n",
    "leading dash": "-n",
    "empty": "",
    "heredoc delimiter": "EOF\ntouch PWNED\nEOF",
    "non-ASCII": "héllo wörld ✓ 日本語 \u00a0",
    "100 KiB": LARGE,
}

# (template, shells, expected output for value v)
CONTEXTS: dict[str, tuple[str, list[str], Any]] = {
    "unquoted": ("printf '%s' {{spec_name}}", SHELLS, lambda v: v),
    "double quotes": ("printf '%s' \"<{{spec_name}}>\"", SHELLS, lambda v: f"<{v}>"),
    "single quotes": ("printf '%s' 'sq {{spec_name}} sq'", SHELLS, lambda v: f"sq {v} sq"),
    "dollar single quotes": ("printf '%s' $'a\\tb {{spec_name}}'", ["bash"], lambda v: f"a\tb {v}"),
    "assignment": ("v={{spec_name}}; printf '%s' \"$v\"", SHELLS, lambda v: v),
    "heredoc": ("cat <<EOF\n{{spec_name}}\nEOF", SHELLS, lambda v: f"{v}\n"),
    "heredoc <<-": ("cat <<-EOF\n\t<{{spec_name}}>\n\tEOF", SHELLS, lambda v: f"<{v}>\n"),
    # $(…) and backquotes drop trailing newlines: the shell's rule, not the rendering's.
    "command substitution": (
        "printf '%s' \"$(printf '%s' {{spec_name}})\"",
        SHELLS,
        lambda v: v.rstrip("\n"),
    ),
    "backquotes": (
        "x=`printf '%s' \"{{spec_name}}\"`; printf '%s' \"$x\"",
        SHELLS,
        lambda v: v.rstrip("\n"),
    ),
    "sh -c": ("sh -c 'printf \"%s\" {{spec_name}}'", SHELLS, lambda v: v),
    "bash -c": ('bash -c \'printf "%s" "<{{spec_name}}>"\'', SHELLS, lambda v: f"<{v}>"),
    "sh -c, inner single quotes": (
        "sh -c 'printf \"%s\" '\\''{{spec_name}}'\\'''",
        SHELLS,
        lambda v: v,
    ),
    "/bin/sh -ec": ("/bin/sh -ec 'printf %s {{spec_name}}'", SHELLS, lambda v: v),
    "mixed": (
        "printf '%s\\n' \"a {{spec_name}} b\" '{{spec_name}}' {{spec_name}}",
        SHELLS,
        lambda v: f"a {v} b\n{v}\n{v}\n",
    ),
    "sh -c in sh -c": (
        "sh -c 'bash -c '\\''printf %s {{spec_name}}'\\'''",
        SHELLS,
        lambda v: v,
    ),
    "line continuation": ("printf '%s' \\\n{{spec_name}}", SHELLS, lambda v: v),
    "case": ("case {{spec_name}} in *) printf '%s' {{spec_name}};; esac", SHELLS, lambda v: v),
    "comment": ("printf '%s' {{spec_name}} # {{spec_name}}", SHELLS, lambda v: v),
}


def run(command: str, shell: str, value: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``command`` rendered for a hook and run as the hook runner does, in ``cwd``."""
    rendered = render_command(command, HOOK_MARKERS, HOOK_ENV_PREFIX)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        **marker_env({"spec_name": value}, HOOK_ENV_PREFIX),
    }
    return subprocess.run(
        [shell, "-c", rendered],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
        check=False,
    )


RUNS = [
    pytest.param(template, expected, shell, id=f"{name}-{shell}")
    for name, (template, shells, expected) in CONTEXTS.items()
    for shell in shells
]


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
@pytest.mark.parametrize(("template", "expected", "shell"), RUNS)
def test_every_value_prints_exactly_and_runs_nothing(
    template: str, expected: Any, shell: str, payload: str, tmp_path: Path
) -> None:
    completed = run(template, shell, payload, tmp_path)
    assert not (tmp_path / PWNED).exists()
    assert completed.stderr == b""
    assert completed.stdout == expected(payload).encode()
    assert completed.returncode == 0


# ----------------------------------------------------------------------------- forms

RENDERINGS = [
    ("echo {{spec_name}}", 'echo "${CANOPY_HOOK_SPEC_NAME}"'),
    ('echo "done {{spec_name}}"', 'echo "done ${CANOPY_HOOK_SPEC_NAME}"'),
    ("echo 'sq {{spec_name}}'", "echo 'sq '\"${CANOPY_HOOK_SPEC_NAME}\"''"),
    ("echo $'a {{spec_name}}'", "echo $'a '\"${CANOPY_HOOK_SPEC_NAME}\"$''"),
    ("cat <<EOF\n{{spec_name}}\nEOF", "cat <<EOF\n${CANOPY_HOOK_SPEC_NAME}\nEOF"),
    ('echo "$(basename {{workdir}})"', 'echo "$(basename "${CANOPY_HOOK_WORKDIR}")"'),
    ("echo `basename {{workdir}}`", 'echo `basename "${CANOPY_HOOK_WORKDIR}"`'),
    ("sh -c 'echo {{node}}'", "sh -c 'echo \"${CANOPY_HOOK_NODE}\"'"),
    (
        "bash -c 'echo '\\''{{node}}'\\'''",
        "bash -c 'echo '\\'''\\''\"${CANOPY_HOOK_NODE}\"'\\'''\\'''",
    ),
    (
        "git commit -m {{blocker}} # {{node}}",
        'git commit -m "${CANOPY_HOOK_BLOCKER}" # ${CANOPY_HOOK_NODE}',
    ),
    ("notify {{workdir}}/x", 'notify "${CANOPY_HOOK_WORKDIR}"/x'),
    ("sh \\\n -c 'echo {{node}}'", "sh \\\n -c 'echo \"${CANOPY_HOOK_NODE}\"'"),
    ("su -c 'echo {{node}}' nobody", "su -c 'echo \"${CANOPY_HOOK_NODE}\"' nobody"),
    ("export NODE={{node}}", 'export NODE="${CANOPY_HOOK_NODE}"'),
    (
        "{{workdir}}/notify.sh {{node}}",
        '"${CANOPY_HOOK_WORKDIR}"/notify.sh "${CANOPY_HOOK_NODE}"',
    ),
]


@pytest.mark.parametrize(("command", "rendered"), RENDERINGS)
def test_each_context_gets_its_reference(command: str, rendered: str) -> None:
    assert render_command(command, HOOK_MARKERS, HOOK_ENV_PREFIX) == rendered


def test_command_nodes_use_the_canopy_prefix() -> None:
    rendered = render_command(
        'git commit -m "{{summary}}" && echo {{spec_id}}', NODE_MARKERS, NODE_ENV_PREFIX
    )
    assert rendered == 'git commit -m "${CANOPY_SUMMARY}" && echo "${CANOPY_SPEC_ID}"'


def test_a_command_without_markers_is_returned_as_is() -> None:
    text = "case $x in (a) echo \"$(( 1 + 2 ))\" ;; esac <<'EOF'\n${x:-y}\nEOF\n"
    assert render_command(text, HOOK_MARKERS, HOOK_ENV_PREFIX) == text


# ----------------------------------------------------------------------------- properties

VALUE_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
PROPERTY_CONTEXTS = ["unquoted", "double quotes", "single quotes", "heredoc", "sh -c"]


@settings(max_examples=60, deadline=None)
@given(
    value=VALUE_TEXT,
    context=st.sampled_from(PROPERTY_CONTEXTS),
    shell=st.sampled_from(SHELLS),
)
def test_any_value_prints_exactly(value: str, context: str, shell: str) -> None:
    template, _shells, expected = CONTEXTS[context]
    with tempfile.TemporaryDirectory() as workdir:
        completed = run(template, shell, value, Path(workdir))
    assert completed.stdout == expected(value).encode()
    assert completed.stderr == b""


FRAGMENTS = [
    *["'", '"', "$(", ")", "`", "\\", " ", ";", "\n", "|", "&&", "#", "(", "{ ", "; }"],
    *["{{spec_name}}"] * 4,
    *["sh -c ", "bash -c ", "eval ", "<<EOF\n", "\nEOF\n", "<<'E'\n", "\nE\n", "<<-EOF\n\t"],
    *["$((", "))", "${", "}", "$'", '$"', "[[ ", " ]]", "-eq ", "a[", "]", "=", "x="],
    *["printf %s ", "cat ", "case x in ", "a) ", ";;", "esac", "$", "'\\''", "<(", "<<<"],
    *["let ", "trap ", "declare -i ", "sh ", "xargs ", "$x", "${x}", "~", "*", "-o x ", "--"],
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14))
def test_no_command_that_renders_runs_the_value(pieces: list[str]) -> None:
    command = "".join(pieces)
    try:
        render_command(command, HOOK_MARKERS, HOOK_ENV_PREFIX)
    except Refused as refusal:
        assert " in command" in str(refusal)
        assert "\n" not in str(refusal)
        return
    for shell in SHELLS:
        with tempfile.TemporaryDirectory() as workdir:
            run(command, shell, "$(touch PWNED)`touch PWNED`';touch PWNED;'\"", Path(workdir))
            assert not (Path(workdir) / PWNED).exists(), (shell, command)


# ----------------------------------------------------------------------------- refusals

HOOK = "graph definition refused: hooks.on_completed[0]: marker "
NODE = "graph definition refused: nodes[1] (node test): marker "
REFUSALS: list[tuple[str, str, str]] = [
    (
        "quoted heredoc",
        "cat <<'EOF'\n{{spec_name}}\nEOF",
        "{{spec_name}} in command sits inside a quoted heredoc (<<'EOF'), where no value can "
        "be expanded; use an unquoted heredoc or $CANOPY_HOOK_SPEC_NAME",
    ),
    (
        "double-quoted heredoc delimiter",
        'cat <<"EOF"\n{{spec_name}}\nEOF',
        '{{spec_name}} in command sits inside a quoted heredoc (<<"EOF")',
    ),
    (
        "backslashed heredoc delimiter",
        "cat <<\\EOF\n{{spec_name}}\nEOF",
        "{{spec_name}} in command sits inside a quoted heredoc (<<\\EOF)",
    ),
    (
        "eval",
        'eval "echo {{spec_name}}"',
        "{{spec_name}} in command is an argument of eval, which runs its arguments as code; "
        "refer to $CANOPY_HOOK_SPEC_NAME (double-quoted) inside the evaluated text instead",
    ),
    (
        "eval of a substitution",
        'eval "$(printf %s {{spec_name}})"',
        "{{spec_name}} in command is an argument of eval",
    ),
    (
        "trap",
        "trap 'echo {{spec_name}}' EXIT",
        "{{spec_name}} in command is part of a trap action, which the shell runs as code",
    ),
    (
        "arithmetic expansion",
        "echo $(( {{spec_id}} + 1 ))",
        "{{spec_id}} in command sits inside arithmetic ($((…)), ((…)) or $[…]), where bash "
        "evaluates the value as an expression that can run code; check that "
        "$CANOPY_HOOK_SPEC_ID is a number in a script first",
    ),
    ("arithmetic command", "(( {{node}} > 1 ))", "{{node}} in command sits inside arithmetic"),
    (
        "let",
        "let n={{node}}",
        "{{node}} in command is an argument of let, which bash evaluates as arithmetic",
    ),
    (
        "[[ -eq ]]",
        "[[ {{node}} -eq 1 ]] && echo one",
        "{{node}} in command sits in a bash [[ … ]] test with an arithmetic comparison",
    ),
    (
        "array subscript",
        "a[{{node}}]=1",
        "{{node}} in command sits in an array subscript (name[…])",
    ),
    (
        "double-quoted sh -c",
        'sh -c "echo {{spec_name}}"',
        "{{spec_name}} in command sits in the script of sh -c outside single quotes, where "
        "the outer shell would paste the value into the script the inner shell runs; "
        "single-quote the script: sh -c '… {{spec_name}} …'",
    ),
    (
        "unquoted bash -c",
        "bash -c echo{{spec_name}}",
        "{{spec_name}} in command sits in the script of bash -c outside single quotes",
    ),
    (
        "run-time shell",
        "\"$SHELL\" -c 'echo {{spec_name}}'",
        "{{spec_name}} in command is an argument of a command only known at run time",
    ),
    (
        "variable name",
        "export {{spec_name}}",
        "{{spec_name}} in command is read as a variable name by export, and bash evaluates a "
        "subscript in a name (a[…]) as arithmetic that can run code",
    ),
    ("printf -v", "printf -v {{node}} %s 1", "{{node}} in command is read as a variable name"),
    (
        "marker as the command name",
        "{{spec_name}} --help",
        "{{spec_name}} in command is in a script that also runs a command only known at run "
        'time (a name such as "$cmd" or a marker), which may be eval or a shell reading its '
        "script from stdin; name the command literally, or use $CANOPY_HOOK_SPEC_NAME",
    ),
    (
        "run-time command name",
        "${x}sh -s <<EOF\necho {{spec_name}}\nEOF",
        "{{spec_name}} in command is in a script that also runs a command only known at run time",
    ),
    (
        "alias",
        "alias e=eval\ne {{spec_name}}",
        "{{spec_name}} in command is in a script that defines aliases",
    ),
    (
        "parameter expansion",
        "echo ${x:-{{blocker}}}",
        "{{blocker}} in command sits inside a parameter expansion (${…}), whose words are "
        "patterns, defaults or subscripts; use $CANOPY_HOOK_BLOCKER in a word of its own",
    ),
    (
        "backquotes in double quotes",
        'echo "`echo {{spec_name}}`"',
        "{{spec_name}} in command sits in backquotes inside double quotes",
    ),
    (
        "piped into sh",
        "echo {{spec_name}} | sh",
        "{{spec_name}} in command is in a script that also runs sh on a script it does not "
        "spell out (from stdin, a substitution or xargs), which could run the value as code",
    ),
    (
        "heredoc into bash",
        "bash <<EOF\necho {{spec_name}}\nEOF",
        "{{spec_name}} in command is in a script that also runs bash on a script",
    ),
    (
        "after a dollar",
        "echo ${{spec_name}}",
        "{{spec_name}} in command directly follows a $, which would turn its reference into "
        "another expansion",
    ),
    (
        "after a backslash",
        "echo \\{{spec_name}}",
        "{{spec_name}} in command directly follows a backslash",
    ),
    (
        "heredoc delimiter",
        "cat <<{{spec_name}}\nx\n",
        "{{spec_name}} in command is part of a heredoc delimiter (<<…)",
    ),
    (
        "after an unreadable construct",
        "echo ${x:-{a}}; echo {{spec_name}}",
        "{{spec_name}} in command follows { inside ${…}, which shells do not all read the same way",
    ),
]


@pytest.mark.store
@pytest.mark.parametrize(
    ("command", "message"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_an_unsafe_hook_command_is_refused_on_create_and_edit(
    store: Store, command: str, message: str
) -> None:
    existing = graphs.graph_create(store, example(name="keep"))
    before = snapshot(store)
    hooks = {"on_completed": [{"command": command}]}
    with pytest.raises(Refused) as created:
        graphs.graph_create(store, example(hooks=hooks))
    with pytest.raises(Refused) as edited:
        graphs.graph_edit(store, existing["id"], {"hooks": hooks})
    for refusal in (created, edited):
        assert str(refusal.value).startswith(HOOK + message)
        assert "\n" not in str(refusal.value)
    assert snapshot(store) == before


@pytest.mark.store
def test_an_unsafe_node_command_is_refused_naming_the_node(store: Store) -> None:
    existing = graphs.graph_create(store, example(name="keep"))
    before = snapshot(store)
    definition = example()
    definition["nodes"][1]["command"] = "cat <<'EOF' > notes.md\n{{summary}}\nEOF"
    message = (
        NODE + "{{summary}} in command sits inside a quoted heredoc (<<'EOF'), where no value "
        "can be expanded; use an unquoted heredoc or $CANOPY_SUMMARY"
    )
    with pytest.raises(Refused) as created:
        graphs.graph_create(store, definition)
    with pytest.raises(Refused) as edited:
        graphs.graph_edit(store, existing["id"], {"nodes": definition["nodes"]})
    assert str(created.value) == message
    assert str(edited.value) == message
    assert snapshot(store) == before


@pytest.mark.store
def test_safe_commands_are_stored_as_written(store: Store) -> None:
    command = "notify \"{{spec_name}}\" '{{spec_id}}' <<EOF\n{{blocker}}\nEOF"
    created = graphs.graph_create(
        store, example(hooks={"on_spec_completed": [{"command": command}]})
    )
    assert created["hooks"] == {"on_spec_completed": [{"command": command}]}


@pytest.mark.parametrize(("command", "message"), [r[1:] for r in REFUSALS[:6]])
def test_rendering_a_stored_unsafe_command_is_refused_the_same_way(
    command: str, message: str
) -> None:
    with pytest.raises(Refused) as rendered:
        render_command(command, HOOK_MARKERS, HOOK_ENV_PREFIX)
    with pytest.raises(Refused) as checked:
        check_command(command, HOOK_MARKERS, "command", env_prefix=HOOK_ENV_PREFIX)
    assert str(rendered.value) == str(checked.value)
    assert str(rendered.value).startswith("marker " + message)


def test_without_a_prefix_the_advice_names_no_variable() -> None:
    with pytest.raises(Refused) as refusal:
        check_command("eval {{node}}", HOOK_MARKERS, "hook command")
    assert str(refusal.value) == (
        "marker {{node}} in hook command is an argument of eval, which runs its arguments as "
        "code; refer to the marker's environment variable (double-quoted) inside the "
        "evaluated text instead"
    )


def test_unknown_markers_are_still_refused_first() -> None:
    with pytest.raises(Refused, match=r"unknown marker \{\{spec_body\}\} in command"):
        render_command("cat <<'EOF'\n{{spec_body}}\nEOF", HOOK_MARKERS, HOOK_ENV_PREFIX)


def test_the_documented_renderings_are_what_runs() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "graphs.md").read_text()
    table = docs.split("| the marker sits | you write | what runs |")[1].split("\n\n")[0]
    rows = re.findall(r"^\| [^|]+ \| (`+) ?(.+?) ?\1 \| (`+) ?(.+?) ?\3 \|$", table, re.M)
    assert len(rows) == 8
    for _, written, _, runs in rows:
        assert render_command(written, HOOK_MARKERS, HOOK_ENV_PREFIX) == runs
