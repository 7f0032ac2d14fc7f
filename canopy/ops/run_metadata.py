"""What a graph run shows in the Temporal UI from its start: the one-line summary in the
workflow list and the details on its page, both markdown.

The summary names the graph and its queue by name, as people call them; the details add
the ids and every command that steers the run, each in a code span so that a command
copied from the UI is the command (markdown would turn ``--mode`` into a dash).
"""

import shlex

from canopy.contracts.graph_run import RunInput
from canopy.markdown import code_span

STEERING = ("pause", "stop", "reset")
"""The steering commands that take only the graph."""
SIGNALS = ("skip_next_spec", "pause", "stop", "reset")
"""The signals that take no input."""


def summary(start: RunInput, number: int, queue_name: str | None) -> str:
    """``build: run 3 over queue nightly in /src/app``."""
    drains = f"queue {queue_name or start.queue_id}" if start.queue_id else "its bound specs"
    return f"{start.graph_name}: run {number} over {drains} in {start.workdir}"


def details(start: RunInput, number: int, workflow_id: str, queue_name: str | None) -> str:
    """What the run drains and how to steer it: the canopy commands, and the same as
    ``temporal workflow signal`` lines."""
    graph = shlex.quote(start.graph_name)
    signal = f"temporal workflow signal --workflow-id {workflow_id} --name"
    recheck = """continue_run --input '{"mode": "recheck"}'"""
    from_node = (
        """continue_run --input '{"mode": "run_from_node", "node": "NODE", "spec_id": "SPEC_ID"}'"""
    )
    drains = (
        f"queue **{queue_name or start.queue_id}** ({code_span(start.queue_id)})"
        if start.queue_id
        else "the graph's bound specs"
    )
    modes = "[--mode recheck|run_from_node|skip_next_spec]"
    return "\n".join(
        [
            f"Graph **{start.graph_name}** ({code_span(start.graph_id)}), run {number} "
            f"({code_span(start.run_id)}): drains {drains} in {code_span(start.workdir)}, its "
            f"nodes on task queue {code_span(start.agents_task_queue)}.",
            "",
            "Steer it with canopy:",
            "",
            f"- {code_span(f'canopy graph info {graph}')}: progress, node runs, the blocker",
            "- " + " · ".join(code_span(f"canopy graph {verb} {graph}") for verb in STEERING),
            f"- {code_span(f'canopy graph continue {graph} {modes}')}",
            "",
            "or with the temporal CLI:",
            "",
            f"- {code_span(f'{signal} {recheck}')}",
            f"- {code_span(f'{signal} {from_node}')}",
            "- " + " · ".join(code_span(f"{signal} {name}") for name in SIGNALS),
            f"- {code_span(f'temporal workflow query --workflow-id {workflow_id} --name status')}",
        ]
    )
