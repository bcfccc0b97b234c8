"""Runbook parsers over every recorded fixture: Xid, watchdog logs, InfiniBand
sysfs, nvidia-smi -q text/XML, py-spy dumps. Expected values were read off the
fixture files by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit_runbooks import gpuhealth, ib, pyspy, watchdog, xid

DATA = Path(__file__).resolve().parents[1] / "data"
XID = DATA / "xid-dmesg"
WD = DATA / "pytorch-nccl-timeout"
IB = DATA / "infiniband" / "gpud-sys-class-infiniband-h100-mlx5_0"


def _xid(name: str) -> list[xid.XidEvent]:
    return xid.parse_log((XID / name).read_text())


# (file, [(xid, pci, pid)], {pci: resolved action})
XID_CASES = [
    ("gpud-dmesg-T-xid119-gsp-rpc-timeout-xe9680.log",
     [(119, "0000:9b:00", 2024380)] * 3 + [(119, "0000:9b:00", 1263500), (119, "0000:9b:00", 1240590)],
     {"0000:9b:00": "RESET_GPU"}),
    ("gpud-dmesg-decode-iso-xid13-xid43-oom.log",
     [(13, "0000:38:00", None)] * 16 + [(43, "0000:38:00", 2924364)], {"0000:38:00": "RESTART_APP"}),
    ("gpud-nvidia-fabricmanager.log", [], {}),
    ("ml-engineering-xid63-row-remapper.txt", [(63, "0000:10:1c", 1896)], {"0000:10:1c": "IGNORE"}),
    ("modal-docs-gpu-health-xid79-line.txt", [(79, "0000:c6:00", 1101234)], {"0000:c6:00": "RESTART_BM"}),
    ("open-gpu-kernel-modules-issue446-xid154-gsp-rpc-timeout-EXCERPT.txt", [(154, "0000:0b:00", None)],
     {"0000:0b:00": "RESET_GPU"}),
    ("pop-os-issue3363-xid79-journalctl-EXCERPT.txt", [(79, "0000:01:00", None), (None, "0000:01:00", None)],
     {"0000:01:00": "RESTART_BM"}),
    # the driver's three-line message, joined (no Xid line at all)
    ("nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt", [(None, "0000:b3:00", None)],
     {"0000:b3:00": "RESTART_BM"}),
    # eight Xid 45 lines on four GPUs, each naming its cause (149 on dc:00, 145 on the others);
    # the eighth line is cut by the excerpt before "caused by"
    ("open-gpu-kernel-modules-issue1150-xid45-caused-by-previous-xid145-149-EXCERPT.txt",
     [(45, "0000:dc:00", 1818990), (45, "0000:ed:00", 1818992), (45, "0000:ba:00", 1818989), (45, "0000:97:00", 1818987),
      (45, "0000:dc:00", 1818990), (45, "0000:ba:00", 1818989), (45, "0000:ed:00", 1818992), (45, "0000:97:00", 1818987)],
     {"0000:dc:00": "RESET_GPU", "0000:ed:00": "RESET_GPU", "0000:ba:00": "RESET_GPU", "0000:97:00": "RESET_GPU"}),
    # GSP heartbeat + RPC timeout, no Xid line; the driver names the GPU "GPU6" (no bus id);
    # the heartbeat line is printed twice and counts once
    ("open-gpu-kernel-modules-issue1230-gsp-heartbeat-timeout-no-xid-EXCERPT.txt", [(None, "GPU6", None)] * 2,
     {"GPU6": "RESET_GPU"}),
    # legacy form without "PCI:" (2012 drivers)
    ("forum-2012-legacy-xid13-no-pci-prefix-syslog-EXCERPT.txt", [(13, "0000:03:00", None)], {"0000:03:00": "RESTART_APP"}),
    ("forum-2012-legacy-xid16-no-pci-prefix-wrapped.txt", [(16, "0000:01:00", None)], {"0000:01:00": "CONTACT_SUPPORT"}),
    # dmesg --time-format=iso: DBE (48) with a row remap (63) on the same GPU -> WORKFLOW_XID_48 drain and reset
    ("gpud-dmesg-time-format-iso-xid48-63-94.log", [(48, "0000:19:00", None), (63, "0000:19:00", None), (94, "0000:19:00", None)]
     + [(94, "0000:19:00", 1248209)] * 8, {"0000:19:00": "DRAIN_AND_RESET"}),
    # NVLink5 Xids: Fatal -> reset; Nonfatal -> watch (contact support); 94 contained -> restart the app
    ("gpud-pr1174-nvlink5-xid149-145-and-94-kmsg-lines-EXCERPT.txt",
     [(149, "0019:01:00", None), (149, "0000:00:00", None), (145, "0018:01:00", None), (94, "0000:9b:00", 1234)],
     {"0019:01:00": "RESET_GPU", "0000:00:00": "RESET_GPU", "0018:01:00": "CONTACT_SUPPORT", "0000:9b:00": "RESTART_APP"}),
    # AER surprise-down on the GPU's root port, then the driver's Xid 79 (the AER lines are no Xid)
    ("gpu-burn-issue1-aer-surprise-down-then-xid79-EXCERPT.txt", [(79, "0000:02:00", None)], {"0000:02:00": "RESTART_BM"}),
    # dmesg -H: only AER lines, no NVRM line at all
    ("returnn-issue1500-dmesg-H-relative-stamps-aer-fatal-EXCERPT.txt", [], {}),
    # Xid 79 plus the driver's own fall-off line (dropped for that GPU), then fatal SXids (sxid.py)
    ("gpud-sxid-readme-xid79-then-fatal-sxid-20034-EXCERPT.txt", [(79, "0000:91:00", None), (None, "0000:91:00", None)],
     {"0000:91:00": "RESTART_BM"}),
    # NVSwitch (SXid) and Fabric Manager lines only: no GPU Xid (test_evidence_kernel judges them)
    ("nvtrust-issue124-sxid-22013-nonfatal-plain-dmesg-EXCERPT.txt", [], {}),
    ("canonical-tdx-issue414-sxid-22013-nonfatal-links-44-46-EXCERPT.txt", [], {}),
    ("gpud-pr338-decode-iso-sxid-12028-data-line-only.txt", [], {}),
    ("gpud-fabricmanager-log-fatal-20034-nonfatal-12028-multicast-EXCERPT.txt", [], {}),
    ("gpu-operator-issue610-fabricmanager-journal-nothing-to-do-EXCERPT.txt", [], {}),
]


@pytest.mark.parametrize("name,events,actions", XID_CASES, ids=[c[0] for c in XID_CASES])
def test_every_xid_fixture_parses_and_classifies(name, events, actions):
    evs = _xid(name)
    assert [(e.xid, e.pci, e.pid) for e in evs] == events
    assert {v.pci: v.action for v in xid.by_gpu(evs)} == actions


def test_all_fixture_files_are_covered():
    assert {p.name for p in XID.iterdir() if p.name != "SOURCES.md"} == {c[0] for c in XID_CASES}
    assert {p.name for p in WD.iterdir() if p.name != "SOURCES.md"} == set(WD_CASES)


def test_xid_wrappers_give_their_time_stamps():
    assert _xid("gpud-dmesg-T-xid119-gsp-rpc-timeout-xe9680.log")[0].stamp == "Sun Feb 23 16:24:18 2025"
    assert _xid("gpud-dmesg-decode-iso-xid13-xid43-oom.log")[0].stamp == "2025-01-21T04:41:44,283302+00:00"
    assert _xid("pop-os-issue3363-xid79-journalctl-EXCERPT.txt")[0].stamp == "Apr 29 19:24:11"
    assert _xid("open-gpu-kernel-modules-issue446-xid154-gsp-rpc-timeout-EXCERPT.txt")[0].stamp == "2026-04-22T21:30:51.870495804Z"
    # dmesg --time-format=iso (no "kern  :warn  :" decode prefix): the stamp was dropped before
    assert _xid("gpud-dmesg-time-format-iso-xid48-63-94.log")[0].stamp == "2024-11-15T12:02:03,470068+00:00"
    assert _xid("forum-2012-legacy-xid13-no-pci-prefix-syslog-EXCERPT.txt")[0].stamp == "May 10 22:25:01"
    assert _xid("nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt")[0].stamp == "1843.308145"


def test_xid_pid_name_and_message_fields():
    ev = _xid("modal-docs-gpu-health-xid79-line.txt")[0]
    assert (ev.process, ev.message) == ("nvc:[driver]", "GPU has fallen off the bus.")
    iso = _xid("gpud-dmesg-decode-iso-xid13-xid43-oom.log")
    assert iso[0].process == "<unknown>" and iso[0].message.startswith("Graphics SM Global Exception")
    assert _xid("ml-engineering-xid63-row-remapper.txt")[0].message.startswith("Row Remapper: New row marked")
    # 79 without pid (newer drivers) keeps the whole message
    assert _xid("pop-os-issue3363-xid79-journalctl-EXCERPT.txt")[0].message == "GPU has fallen off the bus."


def test_xid154_announces_its_recovery_action():
    ev = _xid("open-gpu-kernel-modules-issue446-xid154-gsp-rpc-timeout-EXCERPT.txt")[0]
    assert xid.recovery_154(ev.message) == ("None", "GPU Reset Required")
    c = xid.classify(ev)
    assert (c.catalog, c.action) == ("XID_154", "RESET_GPU")
    # the reference's own example of a node-level recovery action (REFERENCE.md section 3)
    assert xid.recovery_154("changed from 0x0 (None) to 0x2 (Node Reboot Required)") == ("None", "Node Reboot Required")


def test_workflows_of_48_and_45_depend_on_the_other_xids_of_the_gpu():
    e48 = xid.XidEvent(1, "0000:01:00", 48, "DBE")
    assert xid.classify(e48).action == "RESET_GPU"
    assert xid.classify(e48, [48, 63]).action == "DRAIN_AND_RESET"
    e45 = xid.XidEvent(1, "0000:01:00", 45, "")
    assert xid.classify(e45).action == "RESTART_FM"
    assert xid.classify(xid.XidEvent(1, "0000:01:00", 45, "Ch 0000000c caused by previous Xid 145", caused_by=145)).action == "IGNORE"
    assert xid.classify(e45, [45, 79]).action == "IGNORE"
    assert xid.classify(xid.XidEvent(1, "x", 9999, "")).action == "CONTACT_SUPPORT"


def test_pci_ids_from_dmesg_and_nvidia_smi_normalise_alike():
    assert xid.norm_pci("00000000:9B:00.0") == xid.norm_pci("0000:9b:00") == "0000:9b:00"


WD_CASES = {
    "deepspeed-2gpu-broadcast-timeout-flightrecorder-disabled-torch2.6-style.log": {
        0: {"pg": "1", "seq": 1, "op": "BROADCAST", "numel_in": 131072000, "timeout_ms": 600000, "ran_for_ms": 600081,
            "last_enqueued": 547, "last_completed": -1, "timeouts": 1},
        1: {"pg": "1", "seq": 1, "op": "BROADCAST", "numel_in": 131072000, "timeout_ms": 600000, "ran_for_ms": 600088,
            "last_enqueued": 547, "last_completed": -1, "timeouts": 1},
    },
    "llamafactory-issue7396-allreduce-watchdog-timeout-EXCERPT.log": {
        0: {"pg": "1", "seq": 1580, "op": "ALLREDUCE", "numel_in": 466119168, "timeout_ms": 600000, "ran_for_ms": 600060,
            "last_enqueued": 1582, "last_completed": 1579, "timeouts": 1},
        3: {"pg": "1", "seq": None, "op": None, "numel_in": None, "timeout_ms": None, "ran_for_ms": None,
            "last_enqueued": 1582, "last_completed": 1579, "timeouts": 0},
        4: {"pg": None, "seq": 1580, "op": "ALLREDUCE", "numel_in": 466119168, "timeout_ms": 600000, "ran_for_ms": 600067,
            "last_enqueued": None, "last_completed": None, "timeouts": 1},
    },
    "pytorch-issue118369-legacy-format-seqnum-skew-EXCERPT.log": {
        # four lines for rank 0, two of them identical (counted once)
        0: {"pg": None, "seq": 96125, "op": "ALLREDUCE", "numel_in": None, "timeout_ms": 1800000, "ran_for_ms": 25625593,
            "last_enqueued": None, "last_completed": None, "timeouts": 3},
        7: {"pg": None, "seq": 64088, "op": "ALLREDUCE", "numel_in": None, "timeout_ms": 1800000, "ran_for_ms": 25625251,
            "last_enqueued": None, "last_completed": None, "timeouts": 1},
    },
    # heartbeat monitor: "Heartbeat monitor timed out!" and "watchdog got stuck for 600 seconds" per rank;
    # the excerpt's last line ("[rank0]:[E ProcessGroupN") is cut
    "deim-issue105-heartbeat-monitor-watchdog-stuck-EXCERPT.log": {
        0: {"heartbeat": 1, "timeouts": 0}, 1: {"heartbeat": 2, "timeouts": 0}, 2: {"heartbeat": 1, "timeouts": 0}},
    # "[rank4]:... [PG 5 Rank 0]": global rank 4 is PG 5's rank 0; two ranks, not one
    "xdit-issue147-heartbeat-pg5-hard-wrapped-EXCERPT.log": {0: {"heartbeat": 2}, 4: {"heartbeat": 1}},
    "sglang-issue1691-no-heartbeat-first-pg-pg3-EXCERPT.log": {
        0: {"heartbeat": 1}, 1: {"heartbeat": 1}, 2: {"heartbeat": 1}, 6: {"heartbeat": 2}, 7: {"heartbeat": 2}},
    # "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception ..." (GUID header with the old wording); rank 2's line is cut
    "basicsr-issue737-pg-guid-default-pg-exception-wording-EXCERPT.log": {
        0: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 808, "ran_for_ms": 600030, "last_enqueued": 811, "last_completed": 807},
        1: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 808, "ran_for_ms": 600020, "last_enqueued": 811, "last_completed": 807},
        2: {"pg": None, "seq": 808, "ran_for_ms": 600061, "last_completed": None}},
    # global rank 9 ("[Rank 1]" in its TP and EP groups) timed out in PG 5 (TP, SeqNum 49387) and PG 12
    # (EP, ALLTOALL_BASE SeqNum 52229); ranks 8 and 0 only logged flight-recorder dump signals
    "nemo-rl-ray-megatron-tp-ep-pg-guid-names-dump-signal.log": {
        9: {"pg": "12", "pg_guid": "100(EXPERT_MODEL_PARALLEL_GROUP)", "seq": 52229, "op": "ALLTOALL_BASE",
            "last_enqueued": 52258, "last_completed": 52228, "timeouts": 2},
        8: {"timeouts": 0, "dumps": 1}, 0: {"timeouts": 0, "dumps": 2}},
    "ml-engineering-nccl-warn-net-ib-file-line-prefix-wrapped.log": {},
    "ml-engineering-nccl-warn-socket-h-connect-refused.log": {},
    # ANSI colour code and a Ray worker prefix before "[rank1]:"; torch 2.3's "Timeout at NCCL work:
    # 158046, last enqueued NCCL work: 158046, last completed NCCL work: 158045"; the timeout line
    # is printed twice (watchdog line and thread exception) and counts once
    "vllm-issue6042-ray-worker-ansi-prefix-timeout-at-nccl-work-EXCERPT.log": {
        1: {"pg": "1", "seq": 158046, "op": "GATHER", "numel_in": 2867200, "numel_out": 0, "timeout_ms": 600000,
            "ran_for_ms": 600027, "last_enqueued": 158046, "last_completed": 158045, "timeouts": 1}},
    # a log viewer's "[1830] " line numbers before "[rank3]:"; "[PG ID 1 PG GUID 1 Rank 3] timed out after
    # waiting for 60000ms flight recorder dumps to finish" is a flight-recorder line of global rank 3
    "llamafactory-issue8261-line-number-prefix-pg-guid-flight-recorder-wait-EXCERPT.log": {
        3: {"timeouts": 0, "dumps": 1}},
    # what():  [PG n Rank r] Process group watchdog thread terminated ...: the PG comes from that header
    "sglang-issue1693-what-pg3-rank5-allgather-EXCERPT.log": {
        5: {"pg": "3", "pg_guid": None, "seq": 9141, "op": "_ALLGATHER_BASE", "timeout_ms": 600000, "ran_for_ms": 600020}},
    "megatron-issue935-what-pg1-rank7-reduce-scatter-EXCERPT.log": {
        7: {"pg": "1", "seq": 199, "numel_in": 7098994688, "numel_out": 443687168, "ran_for_ms": 882725}},
    "instructlab-pr520-what-pg-guid-default-pg-timeout-1ms-EXCERPT.log": {
        3: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 1, "timeout_ms": 1, "ran_for_ms": 90}},
    # the what() line wrapped at 137 columns inside "colle|ctive" and "millisecond|s": three pieces joined
    "open-r1-issue620-hard-wrapped-trigger-split-EXCERPT.log": {
        3: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 4, "op": "BROADCAST", "timeout_ms": 1800000, "ran_for_ms": 1800011}},
    # a launcher's "dinov2-giant-nodes.cn-d004 [stderr] " prefix; each timeout wrapped after "timeout: " and
    # the status line inside "detected" / "by watchdog"; torch 2.4's "[PG 0 (default_pg) Rank 12]" header
    "milabench-pr269-prefixed-wrapped-after-timeout-colon-EXCERPT.log": {
        11: {"pg": None, "seq": 2070, "op": "REDUCE", "ran_for_ms": 600036, "last_completed": None},
        12: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 2070, "ran_for_ms": 600036, "last_enqueued": 2070,
             "last_completed": 2069},
        14: {"seq": 2070, "ran_for_ms": 600034}, 15: {"seq": 2070, "ran_for_ms": 600040}},
    # indented by the markdown; rank 7 BROADCAST and rank 3 ALLREDUCE at the same SeqNum 80078
    "nccl-issue1409-indented-pg-name-with-space-mixed-ops-EXCERPT.log": {
        7: {"pg": "0", "pg_guid": "0(default_pg)", "seq": 80078, "op": "BROADCAST", "numel_in": 5056,
            "last_enqueued": 80078, "last_completed": 80077},
        3: {"pg": None, "seq": 80078, "op": "ALLREDUCE", "numel_in": 2106881, "ran_for_ms": 600013}},
    # "...timeout: " / "WorkNCCL(...) " / "ran for ...": three pieces, each wrap at a space the text kept
    "findstring-5550531355-rank6-allgather-wrapped-three-pieces.log": {
        6: {"seq": 57, "op": "ALLGATHER", "numel_in": 191, "numel_out": 1528, "timeout_ms": 200000, "ran_for_ms": 200059}},
    # wrapped at "timeout:" and "NumelOut=544," with the spaces dropped; no rank: no rank entry
    "findstring-67380672022-bare-allgather-base-wrapped-no-rank.log": {},
    # the old wording "[Rank 3] NCCL watchdog thread terminated": no PG header, so no PG
    "catalyst-rl-issue15-nccl-watchdog-thread-terminated-old-wording-EXCERPT.log": {
        3: {"pg": None, "seq": 880, "op": "BROADCAST", "timeout_ms": 1800000}},
    # bare lines (issue titles): no rank at all, so no rank entry (log.unranked holds them)
    "megatron-issue1207-title-bare-watchdog-line.log": {},
    "llamafactory-issue7396-title-bare-watchdog-line.log": {},
    "ofa-issue271-title-bare-phrase-no-worknccl-fields.log": {},
    "nccl-issue2013-ibvwrap-modify-qp-110-date-prefix-redacted-EXCERPT.log": {},
    "nccl-issue1405-ib-plugin-status12-localgid-remotegids-EXCERPT.log": {},
    "nccl-issue1814-ib-plugin-status12-then-status5-EXCERPT.log": {},
    "nccl-issue928-net-ib-error4-local-protection-EXCERPT.log": {},
    "nccl-issue562-ibvwrap-create-qp-failed-EXCERPT.log": {},
    "nccl-issue834-title-nccl-system-error.log": {},
    "nccl-issue2013-title-nccl-error-2-modify-qp-errno-110.log": {},
    "nccl-issue1657-title-unhandled-system-error.log": {},
}


@pytest.mark.parametrize("name", sorted(WD_CASES))
def test_every_watchdog_log_parses_per_rank(name):
    log = watchdog.parse((WD / name).read_text())
    got = {r: {k: v for k, v in rep.to_dict().items() if k in WD_CASES[name][r]} for r, rep in log.ranks.items()}
    assert got == WD_CASES[name]


def test_silence_names_a_straggler_only_as_the_exception():
    """A rank that logged nothing is a suspect when its peers did (LlamaFactory#7396: rank 1 of 0-4);
    when most of the assumed world 0..max is silent, the text is part of a job's log and no rank is
    called behind (milabench#269: ranks 11, 12, 14, 15 of 0-15). Built from the recordings' own lines."""
    few = watchdog.parse((WD / "milabench-pr269-prefixed-wrapped-after-timeout-colon-EXCERPT.log").read_text())
    v = watchdog.compare(few)
    assert v.behind == () and v.in_sync and v.unheard == (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13)
    # given the world, the same ranks are what the rule says they are: silent among peers that logged
    assert watchdog.compare(few, world=range(11, 16)).behind == (13,)
    llama = watchdog.parse((WD / "llamafactory-issue7396-allreduce-watchdog-timeout-EXCERPT.log").read_text())
    assert watchdog.compare(llama).behind == (1,) and watchdog.compare(llama).unheard == ()

def test_the_rank_behind_is_named():
    legacy = watchdog.parse((WD / "pytorch-issue118369-legacy-format-seqnum-skew-EXCERPT.log").read_text())
    v = watchdog.compare(legacy)
    assert v.behind == (7,) and "SeqNum 64088" in v.reasons[0]
    # rank 1 never appears: silent. Rank 2's own timeout line is there, cut at "ran fo": it is not
    # called silent (that would be a guess the log contradicts)
    llama = watchdog.parse((WD / "llamafactory-issue7396-allreduce-watchdog-timeout-EXCERPT.log").read_text())
    assert watchdog.compare(llama).behind == (1,)
    assert watchdog.compare(llama, world=range(5)).behind == (1,)
    ds = watchdog.parse((WD / "deepspeed-2gpu-broadcast-timeout-flightrecorder-disabled-torch2.6-style.log").read_text())
    v = watchdog.compare(ds)
    assert v.behind == () and v.in_sync and ds.flight_recorder_off
    assert not legacy.flight_recorder_off


def test_nccl_warn_lines_with_a_source_file_prefix_and_a_hard_wrap():
    log = watchdog.parse((WD / "ml-engineering-nccl-warn-net-ib-file-line-prefix-wrapped.log").read_text())
    assert [(w.host, w.pid, w.device, w.message) for w in log.warns] == [
        ("node-2", 5776, 0, "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, "
         "vendor err 129 (Recv)")]
    log = watchdog.parse((WD / "ml-engineering-nccl-warn-socket-h-connect-refused.log").read_text())
    assert [(w.host, w.pid, w.device, w.message) for w in log.warns] == [
        ("r11i6n2", 486514, 1, "Connect to 10.148.3.247<56821> failed : Connection refused")]


def test_nccl_warn_line_structure():
    # Structure only, shaped like NCCL's own prefix "host:pid:tid [dev] NCCL WARN" (src/debug.cc);
    # no recorded WARN line is among the fixtures.
    log = watchdog.parse("nodeA:123:456 [3] NCCL WARN example message\n")
    assert [(w.host, w.pid, w.device, w.message) for w in log.warns] == [("nodeA", 123, 3, "example message")]


def test_infiniband_sysfs_counters_are_read():
    ports = ib.read_root(IB.parent)
    assert [p.name for p in ports] == ["gpud-sys-class-infiniband-h100-mlx5_0/1"]
    p = ports[0]
    assert (p.state, p.phys_state, p.rate_gbps, p.link_layer) == ("ACTIVE", "LinkUp", 400.0, "InfiniBand")
    files = {f.name: int(f.read_text()) for f in (IB / "ports/1/counters").iterdir()}
    hw = {f.name: int(f.read_text()) for f in (IB / "ports/1/hw_counters").iterdir()}
    assert p.counters == files and p.hw_counters == hw
    assert (p.counters["port_rcv_errors"], p.counters["symbol_error"], p.hw_counters["rx_dct_connect"]) == (14, 0, 422237)
    assert ib.read_root(IB)[0].counters == p.counters  # a device directory works too


def test_infiniband_rules():
    port = ib.read_root(IB)[0]
    assert ib.check_ports([port]) == []
    assert [x.kind for x in ib.check_ports([port], expected_rate_gbps=800)] == ["rate"]
    from dataclasses import replace

    later = replace(port, counters={**port.counters, "symbol_error": 5, "link_downed": 1}, state="DOWN", phys_state="Polling")
    kinds = sorted((x.kind, x.severity) for x in ib.check_ports([later], before=[port]))
    assert kinds == [("counter", "WARN"), ("flap", "CRIT"), ("state", "CRIT"), ("state", "CRIT")]


def test_infiniband_dump_format_matches_the_directory_reader():
    lines = [f"/sys/class/infiniband/mlx5_0/ports/1/{f.relative_to(IB / 'ports/1').as_posix()}\t{f.read_text().strip()}"
             for f in sorted((IB / "ports/1").rglob("*")) if f.is_file()]
    dumped = ib.parse_dump("\n".join(lines))
    direct = ib.read_root(IB)[0]
    assert dumped[0].name == "mlx5_0/1"
    assert (dumped[0].counters, dumped[0].state, dumped[0].rate_gbps) == (direct.counters, direct.state, direct.rate_gbps)


def _checked(g, **kw):
    return [(p.kind, p.severity) for p in gpuhealth.check_gpu(g, **kw) if p.checked]


def test_nvidia_smi_q_text_ecc_and_remap():
    (g,) = gpuhealth.parse_any((DATA / "nvidia-smi-q/nvidia-smi-q-ecc-row-remap-pending-a100-xid63-ml-engineering.txt").read_text())
    assert (g.ecc_corr_volatile, g.ecc_uncorr_volatile, g.ecc_corr_aggregate) == (177, 0, 177)
    assert (g.remapped_correctable, g.remapped_uncorrectable, g.remapped_pending, g.remapped_failure) == (1, 0, True, False)
    assert _checked(g) == [("remap", "WARN")]
    # the excerpt has no temperature, power or PCIe section: those rules say "not checked"
    assert {p.kind for p in gpuhealth.check_gpu(g) if not p.checked} == {"thermal", "power", "throttle", "pcie"}


def test_nvidia_smi_q_xml():
    (g,) = gpuhealth.parse_any((DATA / "nvidia-smi-q/nvidia-smi-q-x-a100-sxm4-v12-telegraf.xml").read_text())
    assert (g.index, g.temp_gpu, g.power_w, g.power_limit_w) == (1, 27.0, 67.03, 500.0)
    assert (g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (4, 4, 16, 16)
    assert (g.clock_event_reasons, g.ecc_uncorr_volatile, g.remapped_pending) == (0, 0, None)
    assert _checked(g) == []
    assert [k for k, _ in _checked(g, temp_warn_c=20)] == ["thermal"]


def test_nvidia_smi_query_csv_reuses_the_telemetry_parser():
    idle = DATA / "nvidia-smi" / "query-gpu-h100-idle.csv"
    if not idle.exists():
        pytest.skip("tests/data/nvidia-smi (telemetry helper's copy) is absent")
    (g,) = gpuhealth.parse_any(idle.read_text())
    assert g.clock_events == ("gpu_idle",) and not g.pcie_degraded
    assert _checked(g) == []


def test_pyspy_dump_groups_and_odd_rank():
    # py-spy 0.4.3's dump layout (Process/Python/Thread/frames), as printed here by
    # `py-spy dump` of a local process; the cluster test runs the real thing.
    blocked = ('Process 11: python job.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n'
               'Thread 11 (idle): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2806)\n'
               '    wrapper (torch/distributed/c10d_logger.py:81)\n    <module> (job.py:20)\n')
    sleeping = ('Process 12: python job.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n'
                'Thread 12 (idle): "MainThread"\n    <module> (job.py:17)\n'
                'Thread 13 (idle): "Thread-1"\n    run (threading.py:982)\n')
    d = pyspy.parse_dump(sleeping)
    assert d.pid == 12 and d.main == ("<module> (job.py:17)",) and len(d.threads) == 2
    stacks = {"rank 0": pyspy.parse_dump(blocked).main, "rank 1": d.main, "rank 2": pyspy.parse_dump(blocked).main}
    assert [len(labels) for _, labels in pyspy.group_stacks(stacks)] == [2, 1]
    odd = pyspy.find_odd(stacks)
    assert odd is not None and odd.labels == ("rank 1",)
    assert pyspy.find_odd({"rank 0": stacks["rank 0"], "rank 2": stacks["rank 2"]}) is None


def test_fall_off_line_next_to_its_xid79_counts_once():
    """The journalctl capture logs Xid 79 and the driver's own fall-off line for
    the same GPU: one event to act on, not an extra 'no Xid' fault."""
    from cockpit_runbooks.xid import by_gpu

    verdicts = by_gpu(_xid("pop-os-issue3363-xid79-journalctl-EXCERPT.txt"))
    assert [(v.pci, v.xids, v.action) for v in verdicts] == [("0000:01:00", (79,), "RESTART_BM")]


def test_bare_watchdog_lines_keep_what_they_state_and_invent_no_rank():
    log = watchdog.parse((WD / "megatron-issue1207-title-bare-watchdog-line.log").read_text())
    # "[BUG] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1,
    # NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out."
    assert log.ranks == {} and [(t.rank, t.seq, t.op, t.numel_in, t.timeout_ms, t.ran_for_ms) for t in log.unranked] == [
        (None, 5, "ALLREDUCE", 1, 600000, 600013)]


@pytest.mark.parametrize("name,expected", [
    # (host, pid, GPU, source file) of each WARN, read off the lines
    ("nccl-issue2013-ibvwrap-modify-qp-110-date-prefix-redacted-EXCERPT.log", [("host-01.example.com", None, 5, "ibvwrap.c:262")]),
    ("nccl-issue1405-ib-plugin-status12-localgid-remotegids-EXCERPT.log", [("kp-ddp-worker-0", 3468, 4, "ib_plugin.c:1615")] * 3),
    ("nccl-issue562-ibvwrap-create-qp-failed-EXCERPT.log",
     [("hai-a100-3", 3778851, 4, "ibvwrap.c:130"), ("hai-a100-3", 3778851, 5, "ibvwrap.c:130"),
      ("hai-a100-3", 3778851, 6, "ibvwrap.c:130")]),
    ("nccl-issue928-net-ib-error4-local-protection-EXCERPT.log",
     [("H100-2", 19989, 1, "transport/net_ib.cc:1295"), ("H100-1", 9821, 1, "transport/net_ib.cc:1295"),
      ("H100-5", 68738, 3, "transport/net_ib.cc:1295")]),
])
def test_nccl_warn_prefixes_as_recorded(name, expected):
    log = watchdog.parse((WD / name).read_text())
    assert [(w.host, w.pid, w.device, w.source) for w in log.warns] == expected


def test_ib_transport_errors_are_decoded():
    from cockpit_runbooks import nccl_ib

    e = nccl_ib.decode("NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor "
                       "err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f")
    assert (e.peer, e.local_gid, e.remote_gid) == ("10.216.210.236<54862>", "fd00:1148:9000:5000:4:200:3:ff22",
                                                   "fd00:1148:9000:5000:4:200:3:ff1f")
    assert "IBV_WC_RETRY_EXC_ERR" in e.what
    assert "IBV_WC_LOC_PROT_ERR" in nccl_ib.decode("Got completion from peer fe80::1%ib0<1> with error 4, opcode 1, len 1, "
                                                   "vendor err 81 (Send)").what
    old = nccl_ib.decode("Call to ibv_modify_qp failed with error Connection timed out.")  # nccl-tests#227's title
    assert old.what == "ibv_modify_qp failed (Connection timed out)"
    assert nccl_ib.decode("Connect to 10.148.3.247<56821> failed : Connection refused") is None
