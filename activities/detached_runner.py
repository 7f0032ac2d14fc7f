"""Runs one detached process and writes its exit status to a file.

``python -I detached_runner.py EXIT_FILE -- ARGV...``, started by :mod:`canopy.activities.detached`
in a new session with the lock file inherited: the lock is held exactly as long as this
process lives, so a worker that crashed and came back can tell a running process from a
finished or lost one. The command inherits this runner's stdin (the ``input`` file) and
output. Stdlib only, run by path in isolated mode without ``site`` (``python -I -S``), so
nothing in the workdir can shadow an import.

It starts once per node, hook and session turn, so it is kept to the interpreter's own
start: ``os.posix_spawnp`` instead of the ``subprocess`` module (about 20 ms less per
launch), doing what ``subprocess.run`` would for the command: signals Python ignores
(``SIGPIPE``, ``SIGXFSZ``) back to their defaults, and no descriptor but stdin, stdout and
stderr inherited, so the lock stays with this runner and never with the command's
children.
"""

import os
import sys

# the C module: ``signal`` builds enums, 4 ms a launch; no stubs ship for it
from _signal import SIGPIPE, SIGXFSZ  # type: ignore[import-not-found]

EXEC_FAILED = 127
"""The exit status reported for a command that could not be started (as a shell does)."""
CANNOT_RUN = "canopy: cannot run "
"""How this runner's line begins when the command could not be started (exit status 127)."""
RESTORED_SIGNALS = (SIGPIPE, SIGXFSZ)
"""Signals Python ignores at start-up that a command must get with their default action
(``yes | head`` ends on SIGPIPE), as ``subprocess``'s ``restore_signals`` does."""


def inherited_descriptors() -> list[int]:
    """Open descriptors above stderr (the lock, and any the worker passed by mistake)."""
    return [fd for fd in map(int, os.listdir("/proc/self/fd")) if fd > 2]


def spawn(command: list[str]) -> int:
    """Run ``command`` (looked up on ``PATH``) to its end; its exit code, ``-N`` for a
    signal, as ``subprocess`` reports it."""
    closing = [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited_descriptors()]
    pid = os.posix_spawnp(
        command[0], command, os.environ, file_actions=closing, setsigdef=RESTORED_SIGNALS
    )
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def main(argv: list[str]) -> int:
    """Run the command, then publish its exit status atomically (``EXIT_FILE``)."""
    exit_file, separator, *command = argv
    if separator != "--" or not command:
        print("usage: detached_runner.py EXIT_FILE -- ARGV...", file=sys.stderr)
        return 2
    try:
        code = spawn(command)
    except OSError as error:
        print(f"{CANNOT_RUN}{command[0]}: {error}", file=sys.stderr, flush=True)
        code = EXEC_FAILED
    partial = f"{exit_file}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(str(code))
    os.replace(partial, exit_file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
