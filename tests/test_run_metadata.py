"""What a run shows in the Temporal UI from its start (the summary and the details that
``canopy graph run`` starts its workflow with): the queue by its name, and every command
in a code span, so that the UI's markdown cannot turn ``--mode`` into a dash."""

import re

from canopy.contracts.graph_run import RunInput
from canopy.ops import run_metadata

START = RunInput(
    run_id="run-fskftgihvk",
    graph_id="graph-lnh5qh3l12",
    graph_name="build",
    queue_id="queue-7apazkvbn3",
    workdir="/home/me/src/app",
    agents_task_queue="canopy-agents@devbox",
)


def test_the_summary_names_the_queue_by_its_name() -> None:
    assert run_metadata.summary(START, 3, "nightly") == (
        "build: run 3 over queue nightly in /home/me/src/app"
    )
    bound = START.model_copy(update={"queue_id": None})
    assert run_metadata.summary(bound, 1, None) == (
        "build: run 1 over its bound specs in /home/me/src/app"
    )


def test_every_command_in_the_details_is_a_code_span() -> None:
    shown = run_metadata.details(START, 3, "canopy-graph-lnh5qh3l12", "nightly")
    assert "drains queue **nightly** (`queue-7apazkvbn3`)" in shown
    assert "`canopy graph continue build [--mode recheck|run_from_node|skip_next_spec]`" in shown
    prose = re.sub(r"(`+).+?\1", "", shown)
    assert "--" not in prose and "canopy graph" not in prose and "temporal workflow" not in prose
