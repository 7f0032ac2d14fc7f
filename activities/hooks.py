"""Firing a graph event's hooks, on the agents queue of the run's host.

The stored hooks are read when the event fires, so an edit that lands before an event is
the one that fires, and hooks are not retroactive. Hooks run in declaration order; each
is recorded with an exact copy of its config. A failing hook is recorded and never stops
the others nor changes the graph's status.

Each hook fires exactly once. Its run is recorded (status ``running``) before it starts,
keyed by run, event occurrence and hook index; its process runs detached
(:mod:`canopy.activities.detached`) in ``<data dir>/logs/runs/<run>/hooks/<hook run id>/``. A
firing retried after a worker crash finishes what the crash interrupted, with the config
recorded when it first fired: a hook whose process is running or done is adopted, one
that never started is started, an interactive hook whose message is already queued is
not queued again. Hook runs already finished are left as they are.
"""

import asyncio
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity

from canopy.activities import ledger
from canopy.activities.detached import (
    Command,
    LaunchError,
    OutputWatcher,
    ProcessEnd,
    ProcessFiles,
    exit_reason,
    run_once,
)
from canopy.backlog import specformat
from canopy.contracts.graph_run import HookFiring, HooksFired
from canopy.errors import Refused
from canopy.graphs import markers
from canopy.graphs.hookmodels import AgentHook, CommandHook, Hook, InteractiveHook, stored_hook
from canopy.graphs.hooks import SPEC_EVENTS
from canopy.ops.session_wake import wake_session
from canopy.ops.sessions import enqueue_hook_message
from canopy.paths import run_log_dir
from canopy.permissions import Permissions, nearest, stored_permissions
from canopy.platforms import get_platform, platform_permissions
from canopy.platforms.usage import HarnessUsage
from canopy.store.engine import Store
from canopy.store.queries import Rows, stored_json
from canopy.timefmt import utcnow

OUTPUT_KEPT_CHARACTERS = 4000
COMMAND_HOOK_TIMEOUT_MINUTES = 60.0


def matching_spec(hook: dict[str, Any], firing: HookFiring) -> str | bool:
    """Whether a hook fires for this occurrence: ``True`` (no ``spec_ids``), ``False``,
    or the matching spec id (a failed queue run matches any of its failed members)."""
    wanted = hook.get("spec_ids")
    if not wanted or firing.event not in SPEC_EVENTS:
        return True
    candidates = [firing.spec_id] if firing.spec_id else firing.failed_specs
    return next((spec_id for spec_id in candidates if spec_id in wanted), False)


def _name_and_summary(name: str, summary: str) -> str:
    """``name: summary``, or just the name for a spec without a summary."""
    return f"{name}: {summary}" if summary else name


def fire_key(firing: HookFiring, index: int) -> str:
    return f"{firing.run_id}:{firing.event}:{firing.occurrence}:{index}"


@dataclass(frozen=True)
class HookEnd:
    """How a hook run ended: its status, kept output, error and log, and for an agent hook
    its platform (whose adapter reads what the harness used from the log)."""

    status: str
    output: str | None
    error: str | None
    log: Path | None
    platform: str | None = None


def hook_files(run_id: str, hook_run_id: int) -> ProcessFiles:
    """``<data dir>/logs/runs/<run>/hooks/<hook run id>/``: ids only."""
    return ProcessFiles(run_log_dir(run_id, "hooks", hook_run_id))


async def run_command_hook(
    hook: CommandHook, values: dict[str, str | None], firing: HookFiring, files: ProcessFiles
) -> tuple[str, str | None, str | None]:
    """A shell command with markers read from the exported ``CANOPY_HOOK_*`` variables."""

    def launch() -> Command:
        rendered, env = markers.shell_command(
            hook.command, values, markers.HOOK_MARKERS, markers.HOOK_ENV_PREFIX
        )
        return Command(["/bin/sh", "-c", rendered], firing.workdir, {**env, **hook_env(firing)})

    watcher = OutputWatcher(files.output, None, None)
    end = await run_once(
        files, launch, timeout_minutes=COMMAND_HOOK_TIMEOUT_MINUTES, watcher=watcher
    )
    return verdict(end, watcher.tail)


async def run_agent_hook(
    hook: AgentHook, values: dict[str, str | None], firing: HookFiring, files: ProcessFiles
) -> tuple[str, str | None, str | None]:
    """An agent launched through the same platform adapters as nodes, prompt on stdin, at
    its permission level (the hook's or graph's, else the platform's, else the default)."""
    platform = get_platform(hook.platform)
    permissions = nearest(hook.permissions, platform_permissions(hook.platform))

    def launch() -> Command:
        prompt = markers.render(hook.prompt, values, markers.HOOK_MARKERS)
        invocation = platform.build_invocation(
            prompt,
            model=hook.model,
            effort=hook.effort,
            resume_session_id=None,
            permissions=permissions,
        )
        return Command(invocation.argv, firing.workdir, hook_env(firing), invocation.stdin)

    watcher = OutputWatcher(files.output, platform, None)
    end = await run_once(files, launch, timeout_minutes=hook.timeout_minutes, watcher=watcher)
    return verdict(end, watcher.tail)


def hook_env(firing: HookFiring) -> dict[str, str]:
    """What every hook process is told about the firing besides the markers."""
    return {"CANOPY_HOOK_EVENT": firing.event, "CANOPY_HOOK_GRAPH_ID": firing.graph_id}


def verdict(end: ProcessEnd, tail: str) -> tuple[str, str | None, str | None]:
    """``(status, output, error)`` of a finished hook process."""
    output = tail[-OUTPUT_KEPT_CHARACTERS:] or None
    if end.exit_code is None:
        return "failed", output, end.problem
    if end.exit_code != 0:
        return "failed", output, exit_reason(end.exit_code, tail)
    return "succeeded", output, None


class HookActivities:
    """The hook activity, bound to the store that holds the hooks and records their runs."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn
    async def fire_hooks(self, firing: HookFiring) -> HooksFired:
        """Run the event's stored hooks in order; the hook runs this attempt ran, and what
        the agent hooks among them used.

        Store work runs on threads, so a slow store never stalls the worker's heartbeats."""
        hooks, graph_permissions = await asyncio.to_thread(self.stored_hooks, firing)
        values = await asyncio.to_thread(self.marker_values, firing)
        fired = HooksFired(hook_run_ids=[])
        for index, hook in enumerate(hooks):
            matched = matching_spec(hook, firing)
            if matched is False:
                continue
            hook_values = {**values, "spec_id": matched} if isinstance(matched, str) else values
            opened = await asyncio.to_thread(
                self.open_hook_run, firing, index, hook, hook_values.get("spec_id")
            )
            if opened is None:
                continue
            hook_run_id, fired_config = opened
            fired.hook_run_ids.append(hook_run_id)
            used = await self.run_and_record(
                hook_run_id, fired_config, hook_values, firing, graph_permissions
            )
            fired.usage = used.plus(fired.usage) if used is not None else fired.usage
        return fired

    def stored_hooks(self, firing: HookFiring) -> tuple[list[dict[str, Any]], Permissions | None]:
        """The hooks of the firing's event, as stored now (an edit during the run counts),
        and the graph's permission level, which agent hooks that set none run at."""
        with self._store.transaction() as rows:
            (graph,) = rows(
                "SELECT CAST(hooks AS TEXT) AS hooks, permissions FROM graphs WHERE id = :id",
                {"id": firing.graph_id},
            )
        hooks = list((stored_json(graph["hooks"]) or {}).get(firing.event, []))
        return hooks, stored_permissions(graph["permissions"])

    def marker_values(self, firing: HookFiring) -> dict[str, str | None]:
        """The reference's markers, populated as the event provides them (others: none)."""
        values: dict[str, str | None] = {
            "graph_name": firing.graph_name,
            "workdir": firing.workdir,
        }
        if firing.event == "on_completed":
            values["completed_specs"] = self.completed_specs(firing.run_id)
        elif firing.event == "on_spec_completed":
            values.update(spec_name=firing.spec_name, spec_id=firing.spec_id)
        elif firing.event == "on_failed":
            first_failed = firing.failed_specs[0] if firing.failed_specs else None
            values.update(
                blocker=firing.blocker, node=firing.node, spec_id=firing.spec_id or first_failed
            )
        else:
            values.update(blocker=firing.blocker, node=firing.node)
        return values

    def completed_specs(self, run_id: str) -> str | None:
        """``name: one-line summary`` of each spec this run completed, in completion order."""
        with self._store.transaction() as rows:
            completed = rows(
                "SELECT s.name, s.body FROM specs s JOIN run_specs p ON p.spec_id = s.id"
                " WHERE p.run_id = :run_id AND p.outcome = 'completed'"
                " ORDER BY p.ended_at, p.id",
                {"run_id": run_id},
            )
        lines = [
            _name_and_summary(spec["name"], specformat.summary_line(spec["body"]))
            for spec in completed
        ]
        return "\n".join(lines) or None

    def open_hook_run(
        self, firing: HookFiring, index: int, hook: dict[str, Any], spec_id: str | None
    ) -> tuple[int, dict[str, Any]] | None:
        """The hook run to run now and the config it fires with; ``None`` if it is done.

        A new occurrence is recorded ``running`` with a copy of ``hook``. A record left
        ``running`` by a crashed worker is handed back with the config it first fired with,
        so the interrupted hook is finished, not dropped and not started twice.
        """
        key = fire_key(firing, index)
        with self._store.transaction() as rows:
            existing = rows(
                "SELECT id, status, CAST(hook_config AS TEXT) AS hook_config FROM hook_runs"
                " WHERE fire_key = :key",
                {"key": key},
            )
            if existing:
                if existing[0]["status"] == "running":
                    return int(existing[0]["id"]), dict(stored_json(existing[0]["hook_config"]))
                return None
            (hook_run,) = rows(
                "INSERT INTO hook_runs (graph_id, run_id, event, hook_index, hook_config,"
                " spec_id, status, fire_key, started_at) VALUES (:graph_id, :run_id, :event,"
                " :hook_index, :hook_config, :spec_id, 'running', :key, :now) RETURNING id",
                {
                    "graph_id": firing.graph_id,
                    "run_id": firing.run_id,
                    "event": firing.event,
                    "hook_index": index,
                    "hook_config": copy.deepcopy(hook),
                    "spec_id": spec_id,
                    "key": key,
                    "now": utcnow(),
                },
            )
            return int(hook_run["id"]), hook

    async def run_and_record(
        self,
        hook_run_id: int,
        hook: dict[str, Any],
        values: dict[str, str | None],
        firing: HookFiring,
        graph_permissions: Permissions | None,
    ) -> HarnessUsage | None:
        """Run one hook and record how it went (any error becomes a failed hook run); what
        its harness reported it used. An agent hook that sets no permission level runs at
        the graph's (``graph_permissions``), if that is set."""
        files: ProcessFiles | None = None
        parsed: Hook | None = None
        try:
            files = hook_files(firing.run_id, hook_run_id)
            parsed = stored_hook(hook)
            if isinstance(parsed, AgentHook) and parsed.permissions is None:
                parsed = parsed.model_copy(update={"permissions": graph_permissions})
            status, output, error = await self.run_hook(parsed, values, firing, files, hook_run_id)
        except (Refused, LaunchError) as failure:  # a hook's failure is recorded, never raised
            status, output, error = "failed", None, str(failure)
        except Exception as failure:
            status, output, error = "failed", None, f"{type(failure).__name__}: {failure}"
        log = files.output if files is not None and files.output.exists() else None
        platform = parsed.platform if isinstance(parsed, AgentHook) else None
        return await asyncio.to_thread(
            self.record_hook_end, hook_run_id, HookEnd(status, output, error, log, platform)
        )

    def record_hook_end(self, hook_run_id: int, end: HookEnd) -> HarnessUsage | None:
        """Write how a hook run ended, with what an agent hook's harness reported it used;
        that usage."""
        try:
            platform = get_platform(end.platform) if end.platform else None
        except Refused:  # the hook failed on it already; its run is recorded all the same
            platform = None
        usage = ledger.read_report(platform, end.log).usage
        columns = {
            "status": end.status,
            "output": end.output,
            "error": end.error,
            "log_path": str(end.log) if end.log else None,
            "platform": end.platform,
            **ledger.usage_columns(usage),
            "ended_at": utcnow(),
        }
        assigned = ", ".join(f"{name} = :{name}" for name in columns)
        with self._store.transaction() as rows:
            rows(f"UPDATE hook_runs SET {assigned} WHERE id = :id", {**columns, "id": hook_run_id})
        return usage

    async def run_hook(
        self,
        hook: Hook,
        values: dict[str, str | None],
        firing: HookFiring,
        files: ProcessFiles,
        hook_run_id: int,
    ) -> tuple[str, str | None, str | None]:
        """Run a hook (as stored, or as its hook run copied it) in its mode;
        ``(status, output, error)``."""
        match hook:
            case CommandHook() as command_hook:
                return await run_command_hook(command_hook, values, firing, files)
            case InteractiveHook() as interactive_hook:
                return await self.run_interactive_hook(
                    interactive_hook, values, firing, hook_run_id
                )
            case AgentHook() as agent_hook:
                return await run_agent_hook(agent_hook, values, firing, files)

    async def run_interactive_hook(
        self,
        hook: InteractiveHook,
        values: dict[str, str | None],
        firing: HookFiring,
        hook_run_id: int,
    ) -> tuple[str, str | None, str | None]:
        """Enqueue the rendered prompt for the target session, resolved at this very fire.

        Fire-and-forget: the hook succeeds once the message is queued and handed to the
        session's delivery workflow; it never waits for the reply. An unresolvable target
        fails the hook with the reason (the prompt stays recallable). A message an
        interrupted attempt already queued for this hook run is not queued again.
        """
        message_id, session_id, error = await asyncio.to_thread(
            self.queue_hook_message, hook, values, firing, hook_run_id
        )
        if error is not None or session_id is None:
            return "failed", None, error
        queued = f"queued {message_id} for session {session_id}"
        try:
            await wake_session(activity.client(), session_id)
        except Exception as failure:  # the message is stored; the next wake delivers it
            return "succeeded", f"{queued}; delivery starts at the next wake ({failure})", None
        return "succeeded", queued, None

    def queue_hook_message(
        self,
        hook: InteractiveHook,
        values: dict[str, str | None],
        firing: HookFiring,
        hook_run_id: int,
    ) -> tuple[str, str | None, str | None]:
        """The hook run's message (queued now, or by an interrupted attempt): its id, the
        session it targets and why it could not be queued."""
        with self._store.transaction() as rows:
            message = _hook_message(rows, hook_run_id) or enqueue_hook_message(
                rows,
                markers.render(hook.prompt, values, markers.HOOK_MARKERS),
                target_session_id=hook.target_session_id,
                target_session_name=hook.target_session_name,
                graph_id=firing.graph_id,
                run_id=firing.run_id,
                event=firing.event,
                hook_run_id=hook_run_id,
            )
            return message["id"], message["session_id"], message["error"]


def _hook_message(rows: Rows, hook_run_id: int) -> dict[str, Any] | None:
    """The message an interrupted attempt of the hook run already queued, if any."""
    found = rows(
        "SELECT id, session_id, error FROM messages WHERE hook_run_id = :id ORDER BY seq LIMIT 1",
        {"id": hook_run_id},
    )
    return found[0] if found else None
