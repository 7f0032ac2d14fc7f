"""Runs one detached process and writes its exit status to a file.

``python -I detached_runner.py EXIT_FILE -- ARGV...``, started by :mod:`canopy.activities.detached`
in a new session with the lock file inherited: the lock is held exactly as long as this
process lives, so a worker that crashed and came back can tell a running process from a
finished or lost one. The command inherits this runner's stdin (the ``input`` file) and
output. Stdlib only, run by path in isolated mode, so nothing in the workdir can shadow
an import.
"""

import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    """Run the command, then publish its exit status atomically (``EXIT_FILE``)."""
    exit_file, separator, *command = argv
    if separator != "--" or not command:
        print("usage: detached_runner.py EXIT_FILE -- ARGV...", file=sys.stderr)
        return 2
    try:
        code = subprocess.run(command, check=False).returncode
    except OSError as error:
        print(f"canopy: cannot run {command[0]}: {error}", file=sys.stderr, flush=True)
        code = 127
    partial = f"{exit_file}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(str(code))
    os.replace(partial, exit_file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
