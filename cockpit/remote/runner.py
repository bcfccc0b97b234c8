"""The SSH Runner: Slurm commands on a login node over ONE pooled connection.

``cockpit --host login01`` (or ``[clusters.NAME] host``) gives the CLI backend
this Runner instead of a local subprocess; nothing above the Runner changes.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from cockpit.runner import CommandResult
from cockpit.errors import CommandNotFound
from cockpit.remote.pool import SshPool
from cockpit.remote.settings import SshSettings


class SshRunner:
    """Implements the Runner protocol on ``host`` through a shared SshPool."""

    def __init__(self, host: str, pool: SshPool, default_timeout: float | None = None) -> None:
        self.host = host
        self.pool = pool
        self.default_timeout = pool.settings.command_timeout if default_timeout is None else default_timeout
        self.description = f"ssh {host}"

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, stdin: bytes | None = None
    ) -> CommandResult:
        """Run argv on the host, every argument quoted. A non-zero exit is returned.

        Raises CommandNotFound (exit 127 with "not found" from the remote shell),
        CommandTimeout, or SshError (a BackendError) when the host cannot be reached.
        """
        limit = self.default_timeout if timeout is None else timeout
        res = await self.pool.run(self.host, argv, timeout=limit, stdin=stdin)
        if res.returncode == 127 and b"not found" in res.stderr:
            raise CommandNotFound(f"ssh {self.host}: {shlex.quote(str(argv[0]))}: command not found on the remote PATH")
        return res

    async def close(self) -> None:
        await self.pool.close()


def make_ssh_runner(cfg, host: str) -> SshRunner:
    """Runner for ``cockpit --host HOST``: its own pool, so one connection.

    The connection is opened lazily on the first command; errors surface then
    as SshError/CommandTimeout with one-line messages.
    """
    settings = SshSettings.from_config(cfg)
    # Slurm commands get the general command timeout (the backend passes its own too).
    timeout = getattr(getattr(cfg, "general", None), "command_timeout", None)
    return SshRunner(host, SshPool(settings), default_timeout=timeout)
