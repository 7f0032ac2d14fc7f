"""The signals that steer a graph run, kept until the run reaches the point that acts on
them: a ``continue_run`` for a parked run, a ``pause`` for the next spec boundary, a
``stop`` or ``reset`` for the node in flight, and the signals it ignored.

The workflow (:mod:`canopy.workflows.graph_run`) hands every signal to
:meth:`Steering.receive` from one dynamic handler, so that no signal can fail a workflow
task: a named handler's input is decoded before it is called, and a signal whose input
does not fit (none where one is required, a wrong shape, a name nobody handles) failed
every task from then on, wedging the run. Here anything that does not fit is ignored and
kept, and the next valid signal steers the run as usual.
"""

from collections.abc import Sequence

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from canopy.contracts.graph_run import (
        SIGNAL_CONTINUE,
        SIGNAL_PAUSE,
        SIGNAL_RESET,
        SIGNAL_SKIP_NEXT_SPEC,
        SIGNAL_STOP,
        ContinueRequest,
        IgnoredSignal,
        IgnoredSignalRecord,
        read_control,
    )


class Steering:
    """What the signals received so far ask of the run, until it acts on them."""

    def __init__(self) -> None:
        self.continue_request: ContinueRequest | None = None
        """How a parked run goes on; only one sent while the run is parked counts."""
        self.pause_requested = False
        """Park at the next spec boundary."""
        self.stop_requested = False
        """Cancel the node in flight, then park."""
        self.reset_requested = False
        """End the run: graph idle, bound specs reopened."""
        self.ignored: list[IgnoredSignalRecord] = []
        """Signals the run did not act on, oldest first."""

    def receive(
        self, run_id: str, name: str, inputs: Sequence[RawValue]
    ) -> IgnoredSignalRecord | None:
        """Take signal ``name`` (``continue_run``, ``skip_next_spec``, ``pause``, ``stop``,
        ``reset``; see :func:`read_control`) with its raw ``inputs``; the record of it
        when it is ignored instead."""
        try:
            converter = workflow.payload_converter()
            decoded = [converter.from_payload(value.payload) for value in inputs]
        except Exception as error:  # whatever the payload, the task must not fail
            message = str(error.args[0]) if error.args else type(error).__name__
            why = (message.splitlines() or [""])[0][:200]
            return self._ignore(run_id, name, f"{name}: its input could not be decoded ({why})")
        try:
            request = read_control(name, decoded)
        except IgnoredSignal as ignored:
            return self._ignore(run_id, name, str(ignored))
        if name == SIGNAL_CONTINUE:
            self.continue_request = request
        elif name == SIGNAL_SKIP_NEXT_SPEC:
            self.continue_request = ContinueRequest(mode="skip_next_spec")
        elif name == SIGNAL_PAUSE:
            self.pause_requested = True
        elif name == SIGNAL_STOP:
            self.stop_requested = True
        elif name == SIGNAL_RESET:
            self.reset_requested = True
        return None

    def _ignore(self, run_id: str, name: str, reason: str) -> IgnoredSignalRecord:
        """Keep an ignored signal (the run records it in the store) and log it."""
        workflow.logger.warning("ignored signal %s: %s", name, reason)
        record = IgnoredSignalRecord(
            run_id=run_id, signal=name[:100], reason=reason, at=workflow.now()
        )
        self.ignored.append(record)
        return record
