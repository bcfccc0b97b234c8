"""NCCL's IB/RoCE transport errors, decoded: the verbs call or completion status,
the peer and the GIDs. Each of them is fatal to the communicator (NCCL returns
ncclSystemError/ncclRemoteError and the job's collectives fail or hang), so they
are CRIT, never a plain WARN. Recorded forms (tests/data/pytorch-nccl-timeout/SOURCES.md):

* ``NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0,
  vendor err 129 (Recv)`` (NCCL <= 2.18, ``transport/net_ib.cc``) and ``... with
  status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:... remoteGidsfd00:...``
  (2.19+ and the HPC-X ``ib_plugin.c``; no space after ``remoteGids``);
* ``Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx_x:1, curr
  state INIT, next state RTR, local GID index 3, local GID ..., remote GID ...`` and the
  older ``Call to ibv_modify_qp failed with error Connection timed out``;
* ``Call to ibv_create_qp failed`` (and other ``ibv_*`` calls).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# enum ibv_wc_status (rdma-core libibverbs/verbs.h), with what each means for NCCL
WC_STATUS = {
    1: ("IBV_WC_LOC_LEN_ERR", "local length error"),
    2: ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    4: ("IBV_WC_LOC_PROT_ERR", "local protection error: a buffer not in a valid memory region "
        "(GPUDirect RDMA / nvidia-peermem registration)"),
    5: ("IBV_WC_WR_FLUSH_ERR", "work request flushed: the QP was already in error (follows an earlier error)"),
    7: ("IBV_WC_BAD_RESP_ERR", "bad response from the peer"),
    8: ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    9: ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request"),
    10: ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    11: ("IBV_WC_REM_OP_ERR", "remote operation error"),
    12: ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded: the peer stopped acknowledging "
         "(link down, peer dead, or a lossy RoCE fabric)"),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", "receiver-not-ready retry counter exceeded"),
    19: ("IBV_WC_FATAL_ERR", "fatal HCA error"),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout"),
    21: ("IBV_WC_GENERAL_ERR", "general error"),
}

_COMPLETION = re.compile(
    r"Got completion from peer (?P<peer>\S+?)(?:<(?P<port>\d+)>)? with (?:status=|error )(?P<st>\d+),? "
    r"opcode[= ](?P<op>\d+),? len[= ](?P<len>\d+),? vendor err (?P<verr>\d+)(?: \((?P<dir>\w+)\))?"
    r"(?: localGid (?P<lgid>\S+))?(?: remoteGids ?(?P<rgid>\S+))?")
_VERBS = re.compile(r"Call to (?P<call>ibv_\w+) failed(?: with (?:error )?(?P<errno>\d+)?\s*(?P<err>[^,.]*))?")
MESSAGES = (_COMPLETION, _VERBS)  # what a wrapped WARN is re-joined to make whole (logjoin.py)
_QP_STATE = re.compile(r"curr state (?P<cur>\w+), next state (?P<next>\w+)")
_ON_DEV = re.compile(r"on dev (?P<dev>[^,\s]+)")
_LOCAL_GID = re.compile(r"local GID (?!index)(?P<gid>[^,\s]+)")
_REMOTE_GID = re.compile(r"remote GID (?P<gid>[^,\s]+)")


@dataclass(frozen=True, slots=True)
class IbError:
    what: str  # one sentence: the call or status, decoded
    peer: str | None = None
    local_gid: str | None = None
    remote_gid: str | None = None
    key: str = ""  # what identical errors share (for grouping repeats)


def _completion(m: re.Match) -> IbError:
    st = int(m["st"])
    name, meaning = WC_STATUS.get(st, (f"status {st}", "an unlisted completion status"))
    peer = m["peer"] + (f"<{m['port']}>" if m["port"] else "")
    what = f"completion status {st} = {name} ({meaning}), vendor err {m['verr']}" + (f" ({m['dir']})" if m["dir"] else "")
    return IbError(what, peer, m["lgid"], m["rgid"], f"wc{st}|{m['peer']}")


def _verbs(m: re.Match, message: str) -> IbError:
    err = (m["err"] or "").strip()
    errno = m["errno"]
    what = f"{m['call']} failed" + (f" with {errno}" if errno else "") + (f" ({err})" if err else "")
    state = _QP_STATE.search(message)
    if state:
        what += f" moving the QP {state['cur']}->{state['next']}"
        if state["next"] == "RTR" and (errno == "110" or "timed out" in err):
            what += " (the remote GID was not reachable: routing, the GID index, or NICs on different rails)"
    dev = _ON_DEV.search(message)
    if dev:
        what += f" on {dev['dev']}"
    lgid, rgid = _LOCAL_GID.search(message), _REMOTE_GID.search(message)
    return IbError(what, None, lgid["gid"] if lgid else None, rgid["gid"] if rgid else None,
                   f"{m['call']}|{errno or err}|{rgid['gid'] if rgid else ''}")


def decode(message: str) -> IbError | None:
    """The IB/RoCE transport error a NCCL WARN message carries, or None."""
    m = _COMPLETION.search(message)
    if m:
        return _completion(m)
    m = _VERBS.search(message)
    if m:
        return _verbs(m, message)
    return None


def sentence(e: IbError) -> str:
    """The finding's words: the decoded error, its peer and GIDs where the line gives them."""
    parts = [e.what]
    if e.peer:
        parts.append(f"peer {e.peer}")
    if e.local_gid:
        parts.append(f"local GID {e.local_gid}")
    if e.remote_gid:
        parts.append(f"remote GID {e.remote_gid}")
    return ", ".join(parts)
