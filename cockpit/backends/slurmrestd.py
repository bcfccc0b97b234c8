"""The slurmrestd backend: Slurm's REST API with a JWT, for a laptop or a bastion
that has no Slurm binaries, no munge and no shell on a login node.

It reads through the CLI backend's own parsing path (the JSON of ``squeue
--json`` and of slurmrestd's ``/jobs`` is the same document for a given
version, as is ``sinfo --json`` and ``/nodes`` on 22.05's v0.0.38): only
where the bytes come from differs, as for a replay. The OpenAPI version is
found from the server's ``/openapi`` document: the newest one cockpit reads
(:data:`cockpit.backends.rest_client.SLURM_VERSIONS`).

It acts through the one gate (cockpit.core.actions) with :class:`RestExecutor`:
cancel, signal, hold, release and, where the API has it (v0.0.40 on), node
update, each read back from the API. What an API version cannot do fails in
one line naming the version, before anything is sent.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import time
from typing import Any

from cockpit.backends.base import Capabilities
from cockpit.backends.rest_accounting import RestAccountingOffer, jobs_params
from cockpit.backends.rest_client import (
    RestAuthError, RestClient, RestSettings, choose_version, find_token, redact, served_versions,
)
from cockpit.backends.slurm_cli import SlurmCliBackend, Unsupported
from cockpit.backends.slurm_exec import node_state_problem
from cockpit.backends.slurm_json_common import num
from cockpit.backends.slurm_text import expand_nodes
from cockpit.errors import BackendError, CockpitError, ParseError
from cockpit.models import Partition, Topology
from cockpit.models.actions import ActionSpec, Params, Step, TargetResult

_OLD = "v0.0.38"  # 22.05: nodes in sinfo --json's shape, no node update


class SlurmRestBackend(SlurmCliBackend):
    """Backend protocol over slurmrestd (see the module docstring)."""

    name = "slurmrestd"
    cannot_act = ""

    def __init__(self, settings: RestSettings, client: RestClient | None = None) -> None:
        super().__init__(runner=None, timeout=settings.timeout)
        self.settings = settings
        self.client = client
        self.api = ""  # the slurm API version in use (v0.0.38 ...)
        self.dbapi = ""  # the slurmdb one, "" where slurmrestd serves none
        self.jobs_params: frozenset[str] = frozenset()  # what /slurmdb/{dbapi}/jobs takes, from /openapi
        self.description = f"slurmrestd {settings.url}"

    @classmethod
    async def from_config(cls, config: Any, runner: Any = None) -> SlurmRestBackend:
        """The backend for ``[rest]`` (and SLURMRESTD_URL), connected and its API version
        chosen. Raises ConfigError, RestAuthError or BackendError (one line each)."""
        from cockpit.errors import ConfigError

        settings = rest_settings(config)
        if not settings.url:
            raise ConfigError("the slurmrestd backend needs a URL: SLURMRESTD_URL, [rest] url "
                              "or [clusters.NAME] rest_url")
        backend = cls(settings)
        await backend.open()
        return backend

    async def open(self) -> None:
        """Token, client, and the API versions from /openapi. Raises as from_config."""
        if self.client is None:
            token = await find_token(self.settings)
            refuse_expired(token)
            user = self.settings.user_name or token_user(token) or os.environ.get("USER", "")
            settings = RestSettings(**{**self.settings.__dict__, "user_name": user})
            self.client = RestClient(settings, token)
        try:
            doc = await self.client.get("/openapi/v3")
        except BackendError as exc:
            if "refused the token" in str(exc):
                raise
            doc = await self.client.get("/openapi")  # 23.02 on also serve it here
        slurm, slurmdb = served_versions(doc)
        self.api = choose_version(slurm)
        self.dbapi = choose_version(slurmdb, "slurmdb") if slurmdb else ""
        self.jobs_params = jobs_params(json.loads(doc), self.dbapi) if self.dbapi else frozenset()
        self.description = f"slurmrestd {self.api} at {self.settings.url}"
        await self._check_token()

    async def _check_token(self) -> None:
        """Ask one thing slurmctld checks the token for (``diag``). On 22.05 slurmrestd
        passes a token through unchecked, and a token slurmctld refuses comes back as
        HTTP 500 "Unspecified error": that is a refused token, said as such."""
        raw = await self.client.get(self._path("diag"))
        said = _errors(raw)
        if said and ("Unspecified error" in said or "Invalid" in said or "authentic" in said.lower()):
            raise RestAuthError(f"slurmctld refused the request through slurmrestd ({said}): the token is "
                                "not accepted (expired, made with another key, or not a Slurm token)")

    def _path(self, what: str) -> str:
        # 23.02 on answer "nodes/" and "nodes" alike; 22.05 knows only the bare form.
        return f"/slurm/{self.api}/{what}"

    async def _get(self, what: str) -> bytes:
        if self.client is None:
            await self.open()
        return await self.client.get(self._path(what))

    async def _fetch(self, key: str) -> bytes:
        """The REST answer standing for the command recorded under ``key``."""
        if key == "version.txt":
            return f"slurm {_release(await self._get('ping'))}".encode()
        if key == "squeue.json":
            return await self._get("jobs")
        if key == "scontrol-nodes.json":
            if self.api == _OLD:  # sinfo --json's shape: read as sinfo.json
                raise Unsupported(["GET", self._path("nodes")], 1, f"{_OLD} nodes are in sinfo --json's shape")
            return await self._get("nodes")
        if key == "sinfo.json":
            return await self._get("nodes")
        raise Unsupported(["GET", key], 1, f"slurmrestd has no {key}")

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        return parse_rest_partitions(await self._get("partitions"), f"slurmrestd {self.api} partitions")

    async def fetch_topology(self) -> Topology:
        return Topology()  # no REST endpoint for the switch tree in any version read here

    def action_executor(self, config: Any) -> Any:
        return RestExecutor(self)

    def probe_runner(self, config: Any) -> Any:
        from cockpit.remote.probes import NoProbes

        return NoProbes("slurmrestd reaches the controller, not the nodes: no probes without SSH")

    def capabilities(self) -> Capabilities:
        """Streaming loads (the CLI's path), accounting over /slurmdb, the gate's executor
        and a probe runner that says why it has none."""
        if self._caps is None:
            self._caps = Capabilities(streaming=self, accounting=RestAccountingOffer(self), executor=self, probes=self,
                                      inspection=self, unread=self)
        return self._caps

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        rec = await self.job_record(job_id)
        return ("GONE", "") if rec is None else (str(rec.get("job_state", "")), str(rec.get("state_reason", "")))

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        rec = await self.job_record(job_id)
        value = (rec or {}).get("excluded_nodes")
        return value if isinstance(value, str) else ""

    async def job_record(self, job_id: int | str) -> dict | None:
        """One job's record from GET job/{id} (an array task or het component: its job's);
        None once Slurm forgot it, or for an id that is not one."""
        base = re.split(r"[_+]", str(job_id).strip(), maxsplit=1)[0]
        if not base.isdecimal():
            return None
        raw = await self._get(f"job/{base}")
        try:
            doc = json.loads(raw)
        except ValueError:
            raise ParseError(f"slurmrestd {self.api} job", "not JSON") from None
        jobs = [j for j in doc.get("jobs") or () if isinstance(j, dict)]
        return next((j for j in jobs if str(j.get("job_id")) == base), None)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        await super().close()


def rest_settings(config: Any) -> RestSettings:
    """``[rest]`` with SLURMRESTD_URL where the config names no URL."""
    rest = config.rest
    url = rest.url or os.environ.get("SLURMRESTD_URL", "")
    return RestSettings(url=url, token_file=rest.token_file, token_command=tuple(shlex.split(rest.token_command)),
                        user_name=rest.user_name, verify_tls=rest.verify_tls, timeout=rest.timeout)


def token_claims(token: str) -> dict:
    """A JWT's claims, only read, never checked (slurmctld checks the signature); {} when
    the token is not a readable JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def token_user(token: str) -> str:
    """The user a Slurm JWT was made for (its ``sun`` claim), "" when it does not say."""
    user = token_claims(token).get("sun")
    return user if isinstance(user, str) and user.isprintable() else ""


def refuse_expired(token: str, now: float | None = None) -> None:
    """Raise RestAuthError for a token whose ``exp`` has passed (said before anything is sent)."""
    exp = token_claims(token).get("exp")
    now = time.time() if now is None else now
    if isinstance(exp, (int, float)) and not isinstance(exp, bool) and exp <= now:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(exp))
        who = token_user(token)
        raise RestAuthError(f"the slurmrestd token expired at {when}" + (f" (made for {who})" if who else "")
                            + ": make a new one (scontrol token)")


def _release(raw: bytes) -> str:
    try:
        meta = json.loads(raw).get("meta") or {}
        slurm = meta.get("Slurm") or meta.get("slurm") or {}
        release = slurm.get("release")
        if not release:
            v = slurm.get("version") or {}
            release = f"{v['major']}.{v['minor']}.{v['micro']}"
    except (ValueError, AttributeError, KeyError, TypeError):
        raise ParseError("slurmrestd ping", "no Slurm release in meta") from None
    return str(release)


def _number(value: Any) -> int | None:
    """A count or limit in either shape (slurm_json_common.num: 60, {"set", "infinite",
    "number"}, Slurm's NO_VAL sentinels), with v0.0.38's -1 for "unlimited"; None for
    unset, unlimited or not a number."""
    try:
        n = num(value, "value", "slurmrestd")
    except ParseError:
        return None
    return None if n is None or n < 0 else n


def parse_rest_partitions(raw: bytes, source: str) -> tuple[Partition, ...]:
    """Partitions from slurmrestd's /partitions (v0.0.38's flat records, or the nested
    ones of v0.0.40 on, which are ``scontrol show partition --json``'s). A record that
    cannot be read is skipped with a ParseError only when none can be read."""
    try:
        doc = json.loads(raw)
    except ValueError:
        raise ParseError(source, "not JSON") from None
    out, bad = [], []
    for rec in doc.get("partitions") or () if isinstance(doc, dict) else ():
        try:
            out.append(_partition(rec, source))
        except (ParseError, AttributeError, TypeError) as exc:
            bad.append(f"{rec.get('name', '?') if isinstance(rec, dict) else '?'}: {exc}")
    if bad and not out:
        raise ParseError(source, "; ".join(bad[:3]))
    return tuple(out)


def _partition(rec: dict, source: str) -> Partition:
    name = rec["name"]
    nodes = rec.get("nodes")
    nodes = nodes.get("configured", "") if isinstance(nodes, dict) else (nodes or "")
    state = rec.get("state")
    if isinstance(rec.get("partition"), dict):  # v0.0.40 on
        state = rec["partition"].get("state")
    if isinstance(state, list):
        state = state[0] if state else "UP"
    flags = [str(f).lower() for f in rec.get("flags") or ()]
    limit = rec.get("max_time_limit")
    if isinstance(rec.get("maximums"), dict):
        limit = rec["maximums"].get("time")
    cpus = rec.get("total_cpus")
    if isinstance(rec.get("cpus"), dict):
        cpus = rec["cpus"].get("total")
    return Partition(name=str(name), nodes=expand_nodes(nodes, "nodes", source), state=str(state or "UP").upper(),
                     is_default="default" in flags, max_time=_number(limit), total_cpus=_number(cpus) or 0)


class RestExecutor:
    """The gate's executor over slurmrestd: each step becomes one request, and the
    target is read back from the API. Never raises for Slurm's or the server's failures."""

    def __init__(self, backend: SlurmRestBackend) -> None:
        self.backend = backend
        who = backend.client.settings.user_name if isinstance(backend.client, RestClient) else ""
        self.description = f"slurmrestd {backend.settings.url}" + (f" as {who}" if who else "")

    def supports(self, spec: ActionSpec) -> bool:
        return self._request_for(spec, "0", Params()) is not None

    def _request_for(self, spec: ActionSpec, target: str, p: Params) -> tuple[str, str, Any, dict | None] | None:
        b = self.backend
        if spec.kind == "job" and target.split("_")[0].isdecimal():
            job = target.split("_")[0]
            if spec.name == "cancel":
                return "DELETE", b._path(f"job/{job}"), None, None
            if spec.name == "signal" and p.signal:
                return "DELETE", b._path(f"job/{job}"), None, {"signal": p.signal}
            if spec.name in ("hold", "release"):
                return "POST", b._path(f"job/{job}"), {"hold": spec.name == "hold"}, None
        if spec.kind == "node" and b.api != _OLD:
            state = {"drain": "DRAIN", "resume": "RESUME", "undrain": "UNDRAIN", "down": "DOWN"}.get(spec.name)
            if state:
                body: dict[str, Any] = {"state": [state]}
                if p.reason:
                    body["reason"] = p.reason
                return "POST", b._path(f"node/{target}"), body, None
        return None

    async def execute(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult:
        req = self._request_for(spec, step.target, params)
        if req is None:
            return TargetResult(step.target, step.argv, "failed",
                                f"slurmrestd {self.backend.api} cannot {spec.name} (use --backend slurm-cli)")
        method, path, body, query = req
        shown = ("slurmrestd", method, path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""),
                 *([json.dumps(body, sort_keys=True)] if body is not None else []))
        try:
            raw = await self.backend.client.request(method, path, body=body, params=query)
        except CockpitError as exc:  # no answer: it may have reached slurmctld
            return TargetResult(step.target, shown, "unknown", f"outcome unknown: {redact(str(exc))}")
        said = _errors(raw)
        if said:
            return TargetResult(step.target, shown, "failed", said)
        problem = await self._verify(spec, step.target)
        if problem:
            return TargetResult(step.target, shown, "failed" if not problem.startswith("?") else "unknown",
                                problem.lstrip("?"))
        return TargetResult(step.target, shown, "done", f"{method} {path}: accepted, read back")

    async def reread(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult | None:
        problem = await self._verify(spec, step.target)
        if problem is None:
            return TargetResult(step.target, step.argv, "done", "read back after the controller returned")
        if problem.startswith("?"):
            return None
        return TargetResult(step.target, step.argv, "failed", f"read back after the controller returned: {problem}")

    async def _verify(self, spec: ActionSpec, target: str) -> str | None:
        """None when the target reads back as promised; a message when not ("?..." when
        the read-back itself failed)."""
        try:
            if spec.kind == "job":
                rec = await self.backend.job_record(target)
                return _job_problem(spec.name, rec)
            if spec.kind == "node":
                nodes = await self.backend.fetch_nodes()
                node = next((n for n in nodes if n.name == target), None)
                return None if node is None else node_state_problem(spec.name, "+".join([node.state, *sorted(node.flags)]))
        except CockpitError as exc:
            return f"?Slurm accepted it, but the read-back failed: {redact(str(exc))}"
        return None


_FINISHED = {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


def _job_problem(action: str, rec: dict | None) -> str | None:
    if rec is None:
        return None
    state = str(rec.get("job_state", ""))
    state = state[0] if isinstance(rec.get("job_state"), list) and rec["job_state"] else state
    reason = str(rec.get("state_reason", ""))
    prio = _number(rec.get("priority"))
    held = prio == 0 or "held" in reason.lower()
    if action == "cancel" and state in _FINISHED:
        return f"job had already finished ({state})"
    if action == "cancel" and state not in ("CANCELLED", "COMPLETING"):
        return f"job still {state} after the cancel"
    if action == "hold" and state == "PENDING" and not held:
        return f"job not held (reason {reason})"
    if action == "release" and held:
        return f"job still held ({reason})"
    return None


def _errors(raw: bytes) -> str:
    """Slurm's own words from an answer's ``errors`` ("" when there are none)."""
    try:
        doc = json.loads(raw or b"{}")
    except ValueError:
        return f"slurmrestd answered no JSON: {redact(raw[:120].decode('utf-8', 'replace'))}"
    said = []
    for err in (doc.get("errors") or ()) if isinstance(doc, dict) else ():
        if isinstance(err, dict):
            words = [str(err[k]) for k in ("description", "error") if err.get(k)]
            text = ": ".join(dict.fromkeys(words))
            code = err.get("error_number") or err.get("error_code") or err.get("errno")
            if text or code:
                said.append(f"{text} (error {code})" if code else str(text))
    return redact("; ".join(said))
