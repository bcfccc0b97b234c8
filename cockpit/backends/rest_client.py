"""An async client for slurmrestd: the JWT, the URL (TCP or a unix socket), the
OpenAPI version the server serves, and errors as one line.

The token is a secret. It comes from ``SLURM_JWT`` (Slurm's own convention), a
token file that only its owner can read (as ssh refuses a loose key), or a
command (``scontrol token``) whose output is read, never shown. It travels
only in the ``X-SLURM-USER-TOKEN`` header: never in argv, a URL, an audit
line, a log, a recording or an error message (:func:`redact` guards the
messages). ``X-SLURM-USER-NAME`` is sent where a user name is configured
(an authenticating proxy in front of slurmrestd names the user).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any

from cockpit.backends.slurm_json_common import slurm_errors
from cockpit.errors import BackendError, ConfigError

# Newest first: the first one the server serves is used.
SLURM_VERSIONS = ("v0.0.44", "v0.0.43", "v0.0.42", "v0.0.41", "v0.0.40", "v0.0.39", "v0.0.38")
_PATH = re.compile(r"^/(slurm|slurmdb)/(v0\.0\.\d+)/")
MAX_BODY = 2 << 30  # a guard, not a limit anyone meets: 500k jobs are ~1.5 GB of JSON


class RestAuthError(BackendError):
    """slurmrestd refused the token (401/403), or there is no token to send."""


@dataclass(frozen=True)
class RestSettings:
    url: str  # http(s)://host:port or unix:/path/to/socket
    token_file: str = ""
    token_command: tuple[str, ...] = ()
    user_name: str = ""
    verify_tls: bool = True
    timeout: float = 30.0


def _check_url(url: str) -> str:
    if url.startswith("unix:"):
        if not url[5:].startswith("/"):
            raise ConfigError(f"slurmrestd URL {url!r}: a unix socket needs an absolute path (unix:/run/slurmrestd.sock)")
        return url
    if not re.match(r"^https?://[^/\s]+", url):
        raise ConfigError(f"slurmrestd URL {url!r}: expected http://host:port, https://host:port or unix:/path")
    return url.rstrip("/")


def read_token_file(path: str) -> str:
    """The token in ``path``, refused when group or others may read it. Raises ConfigError."""
    p = os.path.expanduser(path)
    try:
        st = os.stat(p)
        with open(p, encoding="utf-8") as fh:
            text = fh.read(65536)
    except OSError as exc:
        raise ConfigError(f"token file {path}: {exc.strerror}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"token file {path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}): "
                          f"chmod 600 {path}")
    return _token_text(text, f"token file {path}")


def _token_text(text: str, where: str) -> str:
    """A token from ``SLURM_JWT=...`` (what scontrol token prints) or a bare token."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("SLURM_JWT="):
            line = line[len("SLURM_JWT="):]
        if line:
            if any(c.isspace() for c in line) or not line.isprintable():
                raise ConfigError(f"{where}: not a token (one line such as SLURM_JWT=eyJ...)")
            return line
    raise ConfigError(f"{where} holds no token")


async def token_from_command(argv: tuple[str, ...], timeout: float = 30.0) -> str:
    """Run ``argv`` (no shell) and read the token from its output. Raises ConfigError."""
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except FileNotFoundError:
        raise ConfigError(f"token command {argv[0]!r} not found") from None
    except asyncio.TimeoutError:
        proc.kill()
        raise ConfigError(f"token command {argv[0]!r} did not answer in {timeout:g} s") from None
    if proc.returncode != 0:
        first = (err.decode("utf-8", "replace").strip().splitlines() or [f"exit {proc.returncode}"])[0]
        raise ConfigError(f"token command {argv[0]!r} failed: {redact(first)}")
    return _token_text(out.decode("utf-8", "replace"), f"token command {argv[0]!r}")


async def find_token(settings: RestSettings, environ: dict[str, str] | None = None) -> str:
    """SLURM_JWT, else the token file, else the token command. Raises RestAuthError or ConfigError."""
    env = os.environ if environ is None else environ
    if env.get("SLURM_JWT", "").strip():
        return _token_text(env["SLURM_JWT"], "SLURM_JWT")
    if settings.token_file:
        return read_token_file(settings.token_file)
    if settings.token_command:
        return await token_from_command(settings.token_command, settings.timeout)
    raise RestAuthError("slurmrestd needs a token: set SLURM_JWT (eval $(scontrol token)), "
                        "or [rest] token_file / token_command")


_JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")


def redact(text: str) -> str:
    """Text with anything shaped like a JWT replaced: for every message that may quote a server."""
    return _JWT.sub("<token>", text)


class RestClient:
    """GET/POST/DELETE against one slurmrestd, JSON in and out (gzip accepted)."""

    def __init__(self, settings: RestSettings, token: str) -> None:
        import httpx

        self.settings = settings
        self.url = _check_url(settings.url)
        headers = {"X-SLURM-USER-TOKEN": token, "Accept": "application/json", "Accept-Encoding": "gzip"}
        if settings.user_name:
            headers["X-SLURM-USER-NAME"] = settings.user_name
        if self.url.startswith("unix:"):
            transport = httpx.AsyncHTTPTransport(uds=self.url[5:])
            base = "http://slurmrestd"
        else:
            transport = httpx.AsyncHTTPTransport(verify=settings.verify_tls)
            base = self.url
        self._http = httpx.AsyncClient(base_url=base, headers=headers, transport=transport,
                                       timeout=settings.timeout, follow_redirects=False)
        self.requests = 0  # for the bench and tests: what cockpit asked of the server
        self.bytes = 0

    async def request(self, method: str, path: str, *, body: Any = None, params: dict | None = None) -> bytes:
        """The answer's body. Raises RestAuthError (401/403) or BackendError (one line each)."""
        import httpx

        shown = f"{method} {self.url}{path}"
        try:
            resp = await self._http.request(method, path, params=params,
                                            content=None if body is None else json.dumps(body).encode(),
                                            headers=None if body is None else {"Content-Type": "application/json"})
        except httpx.TimeoutException:
            raise BackendError(f"slurmrestd did not answer {shown} in {self.settings.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise BackendError(f"cannot reach slurmrestd at {self.url}: {redact(str(exc) or type(exc).__name__)}") from None
        self.requests += 1
        self.bytes += len(resp.content)
        if resp.status_code in (401, 403):
            said = _said(resp.content) or resp.reason_phrase
            raise RestAuthError(f"slurmrestd refused the token ({resp.status_code} {resp.reason_phrase}) "
                                f"for {method} {path}: {redact(said)}")
        if resp.status_code >= 400 and not _is_json(resp.content):
            raise BackendError(f"slurmrestd: {shown} gave {resp.status_code} {resp.reason_phrase}: "
                               f"{redact(_said(resp.content))[:200]}")
        return resp.content

    async def get(self, path: str, params: dict | None = None) -> bytes:
        return await self.request("GET", path, params=params)

    async def close(self) -> None:
        await self._http.aclose()


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw or b"null")
    except ValueError:
        return False
    return True


def _said(raw: bytes) -> str:
    """The server's own words: the first of Slurm's ``errors``, or the text's first line."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return (raw.decode("utf-8", "replace").strip().splitlines() or [""])[0]
    said = slurm_errors(doc) if isinstance(doc, dict) else []
    return said[0] if said else ""


def served_versions(openapi: bytes) -> tuple[set[str], set[str]]:
    """({slurm versions}, {slurmdb versions}) from the server's /openapi document."""
    try:
        doc = json.loads(openapi)
    except ValueError:
        raise BackendError("slurmrestd: /openapi is not JSON") from None
    slurm, slurmdb = set(), set()
    for path in (doc.get("paths") or {}) if isinstance(doc, dict) else {}:
        m = _PATH.match(str(path))
        if m:
            (slurm if m.group(1) == "slurm" else slurmdb).add(m.group(2))
    return slurm, slurmdb


def choose_version(served: set[str], api: str = "slurm") -> str:
    """The newest version cockpit reads that the server serves. Raises BackendError."""
    for v in SLURM_VERSIONS:
        if v in served:
            return v
    have = ", ".join(sorted(served)) or "none"
    raise BackendError(f"slurmrestd serves no {api} API version cockpit reads (served: {have}; "
                       f"cockpit reads {SLURM_VERSIONS[-1]} to {SLURM_VERSIONS[0]})")
