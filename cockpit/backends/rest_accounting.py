"""The "accounting" capability of the slurmrestd backend: finished jobs from
slurmrestd's ``/slurmdb/vX/jobs`` and ``/slurmdb/vX/job/{id}``.

A slurmdb job list is the document ``sacct --json`` prints for the same Slurm
version (the same openapi/data_parser plugin writes both), so it is read by the
CLI's own reader (:mod:`cockpit.backends.accounting_json`); only where the
bytes come from differs. Each query is bounded as the CLI's is: a window
relative to the cluster's clock (``start_time=now-Ns``), steps skipped where not
needed, the states asked for, and at most one job id.

The query parameters are the ones the server's own ``/openapi`` document lists
for the jobs path (v0.0.38 on 22.05 has no ``users``: there the users are
filtered here, and the cost line says so). What slurmdbd knows but the REST API
does not serve (sacctmgr's node events, sshare, assoc_mgr) is said in one line.

Slurm 22.05's slurmdb JSON reports exit code 0 for a failed job (script ``exit
3``; see ../shared/TESTCLUSTER.md), and slurmrestd has no ``--parsable2`` to
cross-check: there a job that did not complete has its exit code unknown
(None, shown as "-"), never a false 0.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from cockpit.backends import accounting_json as aj
from cockpit.backends.accounting import (
    AccountingUnavailable, Answer, JobQuery, _human, _off_loop, _since,
)
from cockpit.backends.slurm_json_common import slurm_errors
from cockpit.errors import BackendError
from cockpit.models.accounting import JobRecord, QueryCost

# The jobs query's parameters on 22.05 (v0.0.38, read from its /openapi): used where the
# server's document lists none for the path (a trimmed or unusual one); later versions add users.
_V38_PARAMS = frozenset({"start_time", "end_time", "state", "partition", "account", "node", "skip_steps"})
_NOT_FOUND = 9003  # slurmdb_jobs_get's "Nothing found": an unknown id, not a failure
_UNTRUSTED = "exit codes: this slurmdb API reports 0 for a failed job, left unknown"
# v0.0.38 reads a comma list of states; data_parser (v0.0.40 on) reads each state as one flag
# ("state=COMPLETED,FAILED": 'Unknown flag "COMPLETED,FAILED"', 24.11), so there it is repeated.
_COMMA_STATES = frozenset({"v0.0.38"})


def jobs_params(openapi: dict, dbapi: str) -> frozenset[str]:
    """The query parameter names the server lists for ``/slurmdb/{dbapi}/jobs`` (with or
    without the trailing slash of 23.02 on)."""
    paths = openapi.get("paths") if isinstance(openapi, dict) else None
    for path in (f"/slurmdb/{dbapi}/jobs", f"/slurmdb/{dbapi}/jobs/"):
        get = ((paths or {}).get(path) or {}).get("get") if isinstance(paths, dict) else None
        names = {p.get("name") for p in (get or {}).get("parameters") or () if isinstance(p, dict)}
        if names - {None}:
            return frozenset(n for n in names if isinstance(n, str))
    return _V38_PARAMS if dbapi == "v0.0.38" else _V38_PARAMS | {"users"}


class RestAccounting:
    """Finished jobs through slurmrestd's slurmdb API (see the module docstring)."""

    def __init__(self, client: Any, dbapi: str, params: frozenset[str], tracked_tres: str = "",
                 clock=time.time) -> None:
        self.client = client
        self.dbapi = dbapi
        self.params = params
        self.clock = clock
        # The TRES slurmdbd knows (/slurmdb/vX/tres): AccountingStorageTRES is slurmctld's
        # setting and no REST path serves it; gres/gpuutil is there once it was tracked.
        self.tracked_tres = tracked_tres
        self.source = f"slurmdbd through slurmrestd {dbapi}"

    def _path(self, what: str) -> str:
        return f"/slurmdb/{self.dbapi}/{what}"

    def query(self, q: JobQuery, now: float) -> tuple[dict[str, Any], list[str], dict[str, tuple[str, ...]]]:
        """(the request's parameters, its bounds for the cost line, what is filtered here
        because this API version has no parameter for it)."""
        end = "now" if q.end is None or q.end >= now else _since(q.end, now)
        params: dict[str, Any] = {"start_time": _since(q.start, now), "end_time": end}
        bounds = [f"window {_human((q.end if q.end is not None else now) - q.start)}"]
        if not q.steps and "skip_steps" in self.params:
            params["skip_steps"] = "true"
            bounds.append("no steps")
        if q.every_run and "show_duplicates" in self.params:
            params["show_duplicates"] = "true"
            bounds.append("every run (show_duplicates)")
        if q.states:
            params["state"] = ",".join(q.states) if self.dbapi in _COMMA_STATES else list(q.states)
            bounds.append(f"{len(q.states)} states")
        if q.nodes:
            params["node"] = q.nodes
            bounds.append("nodes " + q.nodes)
        here: dict[str, tuple[str, ...]] = {}
        for key, values in (("users", q.users), ("partition", q.partitions), ("account", q.accounts)):
            if values and key in self.params:
                params[key] = ",".join(values)
            elif values:
                here[key] = values
                bounds.append(f"{key} filtered by cockpit ({self.dbapi} has no {key} parameter)")
        return params, bounds, here

    async def _get(self, what: str, params: dict[str, Any] | None = None) -> tuple[bytes, float, str]:
        started = time.monotonic()
        raw = await self.client.get(self._path(what), params=params)
        shown = f"GET {self._path(what)}" + ("?" + "&".join(
            f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in params.items()) if params else "")
        return raw, time.monotonic() - started, shown

    async def _read(self, what: str, params: dict[str, Any] | None, steps: bool):
        """(doc, records, warnings, seconds, bytes, shown). Raises BackendError naming Slurm's
        words where slurmdbd refused the query; "Nothing found" is no records."""
        raw, took, shown = await self._get(what, params)
        warns: list[str] = []
        doc, recs = await _off_loop(raw, lambda: _decode_rest(raw, steps, warns, shown))
        return doc, recs, warns, took, len(raw), shown

    async def jobs(self, q: JobQuery) -> Answer:
        """Jobs matching ``q``, as the CLI's ``sacct`` query. Raises BackendError/ParseError."""
        now = self.clock()
        params, bounds, here = self.query(q, now)
        doc, recs, warns, took, size, shown = await self._read("jobs", params, q.steps)
        recs = tuple(r for r in recs if _matches(r, here))
        recs, note = _exit_codes(doc, recs)
        cost = QueryCost(shown + (f"  ({note})" if note else ""), took, size, len(recs), tuple(bounds))
        return Answer(recs, (cost,), tuple(warns))

    async def step_usage(self, q: JobQuery) -> Answer:
        """Jobs with their steps' usage (tres.requested.average/max: gres/gpuutil where recorded)."""
        return await self.jobs(replace(q, steps=True))

    async def job(self, job_id: str) -> Answer:
        """One job with its steps (for its efficiency), by id: the newest record of each id,
        as sacct shows without --duplicates. An unknown id gives no items."""
        doc, recs, warns, took, size, shown = await self._read(f"job/{job_id}", None, True)
        newest: dict[str, JobRecord] = {}
        for r in recs:
            if r.job_id not in newest or (r.submit_time or 0) >= (newest[r.job_id].submit_time or 0):
                newest[r.job_id] = r
        recs, note = _exit_codes(doc, tuple(newest.values()))
        cost = QueryCost(shown + (f"  ({note})" if note else ""), took, size, len(recs), ("job " + job_id,))
        return Answer(recs, (cost,), tuple(warns))

    async def node_events(self, nodes: str, start: int, end: int | None = None) -> Answer:
        """No REST path serves sacctmgr's node events: no events, and a warning saying so
        (a report built on them says drained time was not counted, never a silent 0)."""
        return Answer((), (), (f"slurmrestd {self.dbapi} serves no node events (sacctmgr show event): "
                               "drained and down time is not counted; use --backend slurm-cli",))

    async def shares(self, users: tuple[str, ...] = ()) -> Answer:
        raise AccountingUnavailable(f"slurmrestd {self.dbapi} serves no fair-share tree (sshare): use --backend slurm-cli")

    async def limits(self, qos: tuple[str, ...] = (), users: tuple[str, ...] = (),
                     accounts: tuple[str, ...] = ()) -> Any:
        raise AccountingUnavailable("slurmrestd serves no slurmctld limits cache (scontrol show assoc_mgr): "
                                    "use --backend slurm-cli")


def _decode_rest(raw: bytes, steps: bool, warns: list[str], shown: str):
    doc = aj.load(raw)
    errs = [e for e in doc.get("errors") or () if isinstance(e, dict)] if isinstance(doc.get("errors"), list) else []
    if errs and not doc.get("jobs"):
        if all(e.get("error_number") == _NOT_FOUND for e in errs):
            return doc, ()
        raise BackendError(f"slurmrestd: {shown}: {'; '.join(slurm_errors(doc))[:300]}")
    return doc, aj.parse_sacct_json(doc, steps=steps, warnings=warns)


def _matches(rec: JobRecord, here: dict[str, tuple[str, ...]]) -> bool:
    return ((not here.get("users") or rec.user in here["users"])
            and (not here.get("partition") or bool(set(rec.partition.split(",")) & set(here["partition"])))
            and (not here.get("account") or rec.account in here["account"]))


def _exit_codes(doc: dict, recs: tuple[JobRecord, ...]) -> tuple[tuple[JobRecord, ...], str]:
    """The records with untrusted exit codes made unknown (see the module docstring), and
    the note for the cost line ("" where the codes are trusted)."""
    if aj.exit_codes_trusted(doc) or all(r.state == "COMPLETED" for r in recs):
        return recs, ""
    out = []
    for r in recs:
        steps = tuple(s if s.state == "COMPLETED" else replace(s, exit_code=None, exit_signal=None) for s in r.steps)
        if r.state != "COMPLETED":
            r = replace(r, exit_code=None, exit_signal=None, derived_exit_code=None)
        out.append(replace(r, steps=steps))
    return tuple(out), _UNTRUSTED


async def tres_names(client: Any, dbapi: str) -> str:
    """``cpu,mem,gres/gpu,...``: the TRES slurmdbd knows, "" when it cannot say."""
    import json

    try:
        doc = json.loads(await client.get(f"/slurmdb/{dbapi}/tres"))
    except (BackendError, ValueError):
        return ""
    names = []
    found = (doc.get("TRES") or doc.get("tres") or ()) if isinstance(doc, dict) else ()  # "TRES" on 22.05
    for t in found if isinstance(found, list) else ():
        if isinstance(t, dict) and isinstance(t.get("type"), str):
            names.append(f"{t['type']}/{t['name']}" if t.get("name") else t["type"])
    return ",".join(names)



class RestAccountingOffer:
    """The slurmrestd backend's AccountingOffer: the reader where the server serves a
    slurmdb API, else None with ``accounting_why`` saying so in one line."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.accounting_why = ""
        self._reader: RestAccounting | None = None

    async def accounting(self) -> RestAccounting | None:
        if self._reader is not None:
            return self._reader
        b = self.backend
        if b.client is None:
            await b.open()
        if not b.dbapi:
            self.accounting_why = (f"accounting is not configured: slurmrestd at {b.settings.url} serves no slurmdb API "
                                   "(slurmrestd started without its openapi/dbv0.0.x plugin, or no slurmdbd)")
            return None
        self._reader = RestAccounting(b.client, b.dbapi, b.jobs_params, await tres_names(b.client, b.dbapi))
        return self._reader
