"""``canopy doctor``: will the agents this data dir uses run, and do what they should?

For every platform a graph (node, ensemble member, agent hook) or a live session uses, at
each permission level it is used at: whether its CLI is installed, its version (and
whether Canopy's tests ran that version), the argv Canopy would launch, whether the CLI
accepts that argv (run with no prompt, so no model is called), and whether anyone is
signed in where the CLI can tell without a model call. Each problem is one line with its
fix; a problem that would stop a run makes the report not ``ok``. With nothing used yet,
the built-in platforms are checked at their configured level.

Where a Temporal server is up, it is also asked for runs of the retired workflow type
(:mod:`canopy.ops.retired_runs`): a warning, since no agent is involved.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.ops import retired_runs
from canopy.permissions import Permissions, nearest, stored_permissions
from canopy.store.queries import stored_json

if TYPE_CHECKING:
    from canopy.platforms import CliChecks, Platform
    from canopy.store.engine import Store
    from canopy.store.queries import Rows

CHECK_TIMEOUT_SECONDS = 30.0
"""How long one check may take: a CLI's start-up (Node.js, its settings) can take seconds."""
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:[-.+][0-9A-Za-z.]+)?")
BUILT_IN = ("claude", "codex", "gemini")
_ERROR = re.compile(r"(?:error\b|unknown argument|invalid)", re.IGNORECASE)


@dataclass(frozen=True)
class Use:
    """One place a platform is used, at the level its agent would run at now."""

    platform: str
    level: Permissions
    where: str


@dataclass
class LevelReport:
    """One permission level a platform is used at: the argv and whether the CLI takes it."""

    level: str
    used_by: list[str]
    argv: list[str] | None
    accepted: bool | None
    """``None``: not checked (the CLI is missing, or cannot be checked)."""


@dataclass
class PlatformReport:
    """One platform: its CLI, version, sign-in, levels and the problems found."""

    platform: str
    executable: str | None
    """The CLI found on PATH (or as configured); ``None``: not installed."""
    version: str | None
    tested_versions: list[str]
    signed_in: bool | None
    """``None``: the CLI cannot tell without a model call (or was not checked)."""
    levels: list[LevelReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What would stop a run, one line each with the fix."""
    warnings: list[str] = field(default_factory=list)
    """What works but deserves a look (an untested version, no sandbox), each with a fix."""

    @property
    def blocking(self) -> bool:
        """Whether a problem would stop a run."""
        return bool(self.problems)


@dataclass
class DoctorReport:
    """The whole check; ``ok`` when nothing found would stop a run."""

    root: bool
    keep_awake: str
    """Whether the worker can keep this machine awake during runs, and how (or why not)."""
    platforms: list[PlatformReport]
    ok: bool
    retired_runs: str | None = None
    """Runs of the retired workflow type still open, and how to finish them, in one line;
    ``None`` when there are none, or no server answered."""

    def as_json(self) -> dict[str, Any]:
        """Every field, each platform's ``blocking`` included."""
        shown = asdict(self)
        for platform, checked in zip(shown["platforms"], self.platforms, strict=True):
            platform["blocking"] = checked.blocking
        return shown


def doctor(store: Store) -> DoctorReport:
    """Check every platform this data dir uses (or the built-in ones, if none yet), and
    the server for runs of the retired workflow type."""
    with store.transaction() as rows:
        uses = platform_uses(rows)
    if not uses:
        uses = [Use(name, nearest(_configured(name)), "(not used yet)") for name in BUILT_IN]
    by_platform: dict[str, list[Use]] = {}
    for use in uses:
        by_platform.setdefault(use.platform, []).append(use)
    reports = [check_platform(name, used) for name, used in by_platform.items()]
    return DoctorReport(
        root=os.geteuid() == 0,
        keep_awake=keep_awake_state(),
        platforms=reports,
        ok=not any(report.blocking for report in reports),
        retired_runs=retired_runs.check_if_serving(),
    )


def keep_awake_state() -> str:
    """What the worker of this machine does about sleep while a run is active: ``on
    (systemd-inhibit)``, ``off ([agents] keep_awake = false)`` or ``unavailable: why``."""
    from canopy.keep_awake import availability
    from canopy.platforms.config import load_keep_awake

    if not load_keep_awake():
        return "off ([agents] keep_awake = false)"
    available, how = availability()
    return f"on ({how})" if available else f"unavailable: {how}"


def platform_uses(rows: Rows) -> list[Use]:
    """Where each platform is used: graphs' agent nodes, ensemble members and agent
    hooks, and live sessions, each at the level it resolves to now."""
    from canopy.graphs.agents import launched_agents

    uses: list[Use] = []

    def add(platform: str, where: str, *levels: Permissions | None) -> None:
        uses.append(Use(platform, nearest(*levels, _configured(platform)), where))

    graphs = rows(
        "SELECT name, permissions, CAST(nodes AS TEXT) AS nodes,"
        " CAST(ensembles AS TEXT) AS ensembles, CAST(hooks AS TEXT) AS hooks"
        " FROM graphs ORDER BY name, id",
        {},
    )
    for graph in graphs:
        level = stored_permissions(graph["permissions"])
        agents = launched_agents(
            stored_json(graph["nodes"]) or [],
            stored_json(graph["ensembles"]) or {},
            stored_json(graph["hooks"]) or {},
        )
        for agent in agents:
            add(agent.platform, f"graph {graph['name']}, {agent.where}", *agent.permissions, level)
    sessions = rows(
        "SELECT name, platform, permissions FROM sessions WHERE status = 'live' ORDER BY name",
        {},
    )
    for session in sessions:
        permissions = stored_permissions(session["permissions"])
        add(session["platform"], f"session {session['name']}", permissions)
    return uses


def _configured(platform: str) -> Permissions | None:
    """The platform's level in config.toml; ``None`` when the file says none (or cannot
    be read: that problem is reported where the platform is looked up)."""
    from canopy.platforms import platform_permissions

    try:
        return platform_permissions(platform)
    except Refused:
        return None


def check_platform(name: str, uses: list[Use]) -> PlatformReport:
    """One platform's checks, at every level it is used at."""
    from canopy.platforms import get_platform, missing_program

    report = PlatformReport(name, None, None, [], None)
    levels: dict[Permissions, list[str]] = {}
    for use in uses:
        levels.setdefault(use.level, []).append(use.where)
    try:
        platform = get_platform(name)
    except Refused as refusal:
        _problem(report, f"{refusal}; fix: correct the platform's config.toml table")
        return report
    checks = platform.cli_checks()
    for level, used_by in levels.items():
        report.levels.append(_level(report, platform, level, used_by))
    argv = next((lvl.argv for lvl in report.levels if lvl.argv), None)
    if argv is None:
        return report
    missing = missing_program(name)
    if missing is not None:
        _problem(report, missing)
        return report
    report.executable = shutil.which(argv[0])
    if checks is None:
        return report  # a user-defined platform: nothing more can be told without running it
    report.tested_versions = list(checks.tested)
    _check_version(report, checks)
    for level_report in report.levels:
        if level_report.argv is not None:
            _check_argv(report, checks, level_report)
    _check_auth(report, checks)
    return report


def _level(
    report: PlatformReport, platform: Platform, level: Permissions, used_by: list[str]
) -> LevelReport:
    """The argv ``platform`` would launch at ``level`` (``None`` if the adapter refuses)."""
    try:
        invocation = platform.build_invocation(
            "", model=None, effort=None, resume_session_id=None, permissions=level
        )
    except Refused as refusal:
        _problem(report, f"{level}: {refusal}")
        return LevelReport(level, used_by, None, False)
    return LevelReport(level, used_by, invocation.argv, None)


def _check_version(report: PlatformReport, checks: CliChecks) -> None:
    output, _ = _run(checks.version)
    found = _VERSION.search(output)
    report.version = found.group(0) if found else None
    if report.version is None:
        first = output.strip().splitlines()[0] if output.strip() else "nothing"
        _problem(
            report,
            f"`{shlex.join(checks.version)}` printed {first!r}, not a version; "
            "fix: reinstall the CLI",
        )
    elif checks.tested and report.version not in checks.tested:
        tested = ", ".join(checks.tested)
        report.warnings.append(
            f"version {report.version} is not one Canopy's tests ran ({tested}); it may "
            f"print or refuse what Canopy does not expect; fix: install {tested} to be sure"
        )


def _check_argv(report: PlatformReport, checks: CliChecks, level: LevelReport) -> None:
    """Run the level's argv with no prompt: a CLI that accepts it complains of that."""
    assert level.argv is not None
    output, _ = _run(level.argv)
    if checks.signed_out is not None and checks.signed_out.search(output):
        report.signed_in = False
        level.accepted = None
        return
    level.accepted = bool(checks.accepted.search(output))
    if level.accepted and checks.signed_out is not None and report.signed_in is None:
        report.signed_in = True  # it got past its own sign-in check to the missing prompt
    for pattern, warning in checks.warnings:
        if pattern.search(output) and warning not in report.warnings:
            report.warnings.append(warning)
    if not level.accepted:
        tested = ", ".join(checks.tested) or "see docs/platforms.md"
        _problem(
            report,
            f"{level.level}: the CLI refused Canopy's argv ({_complaint(output)}); fix: what "
            f"it says, or, if it names an option, install a version the tests ran ({tested})",
        )


def _check_auth(report: PlatformReport, checks: CliChecks) -> None:
    if checks.auth is not None and checks.signed_in is not None:
        output, _ = _run(checks.auth)
        report.signed_in = checks.signed_in(output)
    if report.signed_in is False:
        _problem(
            report,
            f"nobody is signed in to {report.platform}; fix: sign in as the user "
            f"the worker runs as (docs/platforms.md, 'Signing in')",
        )


def _problem(report: PlatformReport, text: str) -> None:
    report.problems.append(text)


def _complaint(output: str) -> str:
    """What a CLI said against its argv: its first error line, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if _ERROR.match(line)]
    return (errors or lines or ["no output"])[0 if errors else -1][:200]


def _run(argv: list[str]) -> tuple[str, int | None]:
    """What ``argv`` prints (stdout and stderr) with nothing on stdin, and its exit code;
    never a model call: given no prompt, the CLIs stop before any."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=CHECK_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {CHECK_TIMEOUT_SECONDS:g} s", None
    except OSError as error:
        return str(error), None
    return done.stdout + done.stderr, done.returncode


def report_lines(report: DoctorReport) -> list[str]:
    """The report for a person, one fact or problem a line (the CLI prints these, the TUI
    shows them): each platform, each level with its argv, then the problems and a verdict."""
    lines = [
        f"running as root: {'yes' if report.root else 'no'}",
        f"keep awake during runs: {report.keep_awake}",
    ]
    if report.retired_runs is not None:
        lines.append(f"warning: {report.retired_runs}")
    for checked in report.platforms:
        version = checked.version or "version unknown"
        if checked.version and checked.tested_versions:
            tested = "tested" if checked.version in checked.tested_versions else "not tested"
            version = f"{version} ({tested})"
        signed = {True: "yes", False: "no", None: "cannot tell"}[checked.signed_in]
        lines.append("")
        lines.append(
            f"{checked.platform}: {checked.executable or 'not installed'} · {version} · "
            f"signed in: {signed}"
        )
        for level in checked.levels:
            accepted = {True: "accepted", False: "refused", None: "not checked"}[level.accepted]
            lines.append(f"  {level.level} ({accepted}), used by {'; '.join(level.used_by)}")
            if level.argv is not None:
                lines.append(f"    {shlex.join(level.argv)}")
        lines.extend(f"  problem: {problem}" for problem in checked.problems)
        lines.extend(f"  warning: {warning}" for warning in checked.warnings)
    blocking = [checked.platform for checked in report.platforms if checked.blocking]
    lines.append("")
    lines.append(
        "ok: nothing found would stop a run"
        if report.ok
        else f"not ok: {', '.join(blocking)} would stop a run (see the problems above)"
    )
    return lines
