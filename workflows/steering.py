"""The signals and updates that steer a graph run, kept until the run reaches the point that
acts on them: a ``continue_run`` for a parked run, a ``pause`` for the next spec boundary, a
``stop`` or ``reset`` for the node in flight, and the signals it ignored.

The workflow (:mod:`canopy.workflows.graph_run`) hands every signal to
:meth:`Steering.receive` from one dynamic handler, so that no signal can fail a workflow
task: a named handler's input is decoded before it is called, and a signal whose input
does not fit (none where one is required, a wrong shape, a name nobody handles) failed
every task from then on, wedging the run. Here anything that does not fit is ignored and
kept, and the next valid signal steers the run as usual.

Each signal is also an update of the same name (Canopy's own clients send those while a
worker serves the run): :meth:`Steering.validate` refuses one that does not fit, or that
does not apply to the run's state, before it is accepted (a refused update leaves nothing
in the history), and :meth:`Steering.answer` applies it exactly as the signal is applied
(:meth:`Steering.apply`), then answers once the run has acted on it.
"""

from collections.abc import Sequence

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

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
        SteerOutcome,
        read_control,
    )
    from canopy.contracts.graph_run_signals import STEERING_REFUSED, refusal


class Steering:
    """What the signals and updates received so far ask of the run, until it acts on them,
    and the graph's status as the run has it, which updates are judged by and wait on."""

    def __init__(self, graph_name: str) -> None:
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
        self.graph_name = graph_name
        self.graph_status = "running"
        """The graph's status as the run is writing it (set before the store write, so
        an update is judged by where the run is going)."""
        self.blocker: str | None = None
        """The message of the blocker the run last wrote (``None`` while it runs)."""
        self.moves = 0
        """How many times the run has written a new status; an update waits for the next."""
        self.ended = False
        """This execution is ending (settled, reset or continuing as new): no update waits."""

    def receive(
        self, run_id: str, name: str, inputs: Sequence[RawValue]
    ) -> IgnoredSignalRecord | None:
        """Take signal ``name`` (``continue_run``, ``skip_next_spec``, ``pause``, ``stop``,
        ``reset``; see :func:`read_control`) with its raw ``inputs``; the record of it
        when it is ignored instead."""
        try:
            request = self._read(name, inputs)
        except IgnoredSignal as ignored:
            return self._ignore(run_id, name, str(ignored))
        self.apply(name, request)
        return None

    def validate(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Refuse update ``name`` (an error of type ``SteeringRefused`` whose message is
        the one line users see) when its input does not fit or it does not apply to the
        graph's status now (:func:`~canopy.contracts.graph_run_signals.refusal`)."""
        try:
            self._read(name, inputs)
        except IgnoredSignal as ignored:
            raise ApplicationError(str(ignored), type=STEERING_REFUSED) from None
        problem = refusal(name, self.graph_name, self.graph_status)
        if problem is not None:
            raise ApplicationError(problem, type=STEERING_REFUSED)

    async def answer(self, name: str, inputs: Sequence[RawValue]) -> SteerOutcome:
        """Apply update ``name`` (validated) as its signal, then wait until the run has acted:
        written its next status (running again or parked anew after a continue, parked
        after a pause or stop) or, for a reset, ended; the graph's status and blocker then."""
        seen = self.moves
        self.apply(name, self._read(name, inputs))

        def acted() -> bool:
            if name in (SIGNAL_CONTINUE, SIGNAL_SKIP_NEXT_SPEC):
                return self.moves > seen
            # a pause or stop accepted just as a continue resumed the run waits on
            return name != SIGNAL_RESET and self.moves > seen and self.graph_status != "running"

        await workflow.wait_condition(lambda: self.ended or acted())
        return SteerOutcome(status=self.graph_status, blocker=self.blocker)

    def apply(self, name: str, request: ContinueRequest | None) -> None:
        """What a valid signal or update asks, kept until the run acts on it."""
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

    def pending(self) -> bool:
        """Whether a ``pause``, ``stop`` or ``reset`` waits for the run to act on it."""
        return self.pause_requested or self.stop_requested or self.reset_requested

    def parking(self) -> None:
        """The run parks now: pending ``pause``/``stop`` requests are spent, and only a
        continue sent from now on resumes it."""
        self.graph_status = "paused"
        self.pause_requested = False
        self.stop_requested = False
        self.continue_request = None

    def moved(self, blocker: str | None = None) -> None:
        """The run has written its new status (with ``blocker``'s message) to the store."""
        self.blocker = blocker
        self.moves += 1

    def _read(self, name: str, inputs: Sequence[RawValue]) -> ContinueRequest | None:
        """What ``name`` with its raw ``inputs`` asks (see :func:`read_control`), or
        :class:`IgnoredSignal` naming what does not fit."""
        try:
            converter = workflow.payload_converter()
            decoded = [converter.from_payload(value.payload) for value in inputs]
        except Exception as error:  # whatever the payload, the task must not fail
            message = str(error.args[0]) if error.args else type(error).__name__
            why = (message.splitlines() or [""])[0][:200]
            raise IgnoredSignal(f"{name}: its input could not be decoded ({why})") from None
        return read_control(name, decoded)

    def _ignore(self, run_id: str, name: str, reason: str) -> IgnoredSignalRecord:
        """Keep an ignored signal (the run records it in the store) and log it."""
        workflow.logger.warning("ignored signal %s: %s", name, reason)
        record = IgnoredSignalRecord(
            run_id=run_id, signal=name[:100], reason=reason, at=workflow.now()
        )
        self.ignored.append(record)
        return record
