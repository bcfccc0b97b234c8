"""One exception tree for cockpit, and the exit codes of the headless mode.

Every error that can reach a user derives from :class:`CockpitError` and carries
a one-line, human message naming the bad value. The CLI prints ``str(err)`` and
exits with ``err.exit_code``; no traceback reaches the user.
"""

from __future__ import annotations

# Headless exit codes for commands that are not checks.
EXIT_OK = 0
EXIT_FAILED = 1  # the command ran but (some of) what was asked failed
EXIT_USAGE = 2  # bad arguments or configuration
EXIT_UNAVAILABLE = 3  # the cluster (or a tool) could not be reached

# Checks follow the monitoring-plugin convention.
CHECK_OK, CHECK_WARN, CHECK_CRIT, CHECK_UNKNOWN = 0, 1, 2, 3


class CockpitError(Exception):
    """Base of every error cockpit reports to a user."""

    exit_code = EXIT_FAILED


class ConfigError(CockpitError):
    """A config file or key is wrong; the message names the file and the key."""

    exit_code = EXIT_USAGE


class UsageError(CockpitError):
    """Bad command-line input."""

    exit_code = EXIT_USAGE


class ParseError(CockpitError):
    """Output from Slurm (or a tool) could not be understood.

    ``source`` names what was being parsed (for example ``squeue --json``).
    """

    def __init__(self, source: str, detail: str) -> None:
        super().__init__(f"cannot parse {source}: {detail}")
        self.source = source
        self.detail = detail


class BackendError(CockpitError):
    """The cluster could not be asked: a command is missing, failed or timed out."""

    exit_code = EXIT_UNAVAILABLE


class CommandNotFound(BackendError):
    """A required program (``squeue``, ``ssh`` ...) is not on PATH."""


class CommandFailed(BackendError):
    """A program ran and exited non-zero; ``stderr`` holds its own words."""

    def __init__(self, argv: list[str] | tuple[str, ...], returncode: int, stderr: str) -> None:
        first = (stderr.strip().splitlines() or [f"exit status {returncode}"])[0]
        super().__init__(f"{argv[0]} failed (exit {returncode}): {first}")
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr


class CommandTimeout(BackendError):
    """A program did not finish within its timeout."""


class ReadOnlyError(CockpitError):
    """A destructive action was asked for in read-only mode."""

    exit_code = EXIT_USAGE
