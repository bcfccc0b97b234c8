"""``--cluster all`` without a cluster: the per-cluster loop, keyed output, worst exit code."""

from __future__ import annotations

import json

from cockpit import cli


def _cfg(tmp_path, text):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return str(p)


def test_cluster_all_needs_configured_clusters(tmp_path, capsys):
    rc = cli.main(["--config", _cfg(tmp_path, ""), "--cluster", "all", "snapshot"])
    assert rc == 2 and "no [clusters.NAME]" in capsys.readouterr().err


def test_cluster_all_runs_each_cluster_and_keys_the_json(tmp_path, capsys):
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\n\n[clusters.b]\nbackend = "demo"\n')
    rc = cli.main(["--config", cfg, "--cluster", "all", "snapshot", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and set(out["clusters"]) == {"a", "b"}
    assert all(doc["simulated"] and doc["nodes"] for doc in out["clusters"].values())


def test_cluster_all_text_output_names_each_cluster(tmp_path, capsys):
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\n\n[clusters.zz]\nbackend = "demo"\n')
    rc = cli.main(["--config", cfg, "--cluster", "all", "snapshot", "--partition", "nosuch"])
    captured = capsys.readouterr()
    assert rc == 2  # the worst of the two: each refused the unknown partition
    assert "== cluster a ==" in captured.out and "== cluster zz ==" in captured.out
    assert captured.err.count("unknown partition") == 2


def test_the_tui_opens_every_cluster_and_names_the_one_that_cannot_be_opened(tmp_path, monkeypatch):
    """``cockpit --cluster all``: one session per cluster, each with its own intervals; a
    cluster whose slurmrestd does not answer (nothing listens on that loopback port) is
    named with why, and the others open."""
    import asyncio

    from cockpit.tui.launch import _open_sessions

    monkeypatch.setenv("SLURM_JWT", "not-a-real-token")
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\nrefresh_nodes = 2.5\n\n[clusters.b]\nbackend = "demo"\n\n'
                         '[clusters.gone]\nbackend = "slurmrestd"\nrest_url = "http://127.0.0.1:9"\n')
    sessions, unopened = asyncio.run(_open_sessions(cli.build_parser().parse_args(["--config", cfg, "--cluster", "all"])))
    try:
        assert [s.config.cluster for s in sessions] == ["a", "b"]
        assert [s.config.refresh.nodes for s in sessions] == [2.5, 5.0]  # a's own; b's from [refresh]
        assert list(unopened) == ["gone"] and "cannot reach slurmrestd at http://127.0.0.1:9" in unopened["gone"]
    finally:
        for s in sessions:
            asyncio.run(s.close())


def test_cluster_all_never_acts(tmp_path, capsys):
    """Job ids and node names are per cluster: one --yes must not act on every cluster."""
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\n\n[clusters.b]\nbackend = "demo"\n')
    for argv in (["job", "cancel", "48213", "--yes"], ["node", "drain", "dgx006", "--reason", "x", "--yes"],
                 ["exec", "dgx001", "--", "true"]):
        assert cli.main(["--config", cfg, "--cluster", "all", *argv]) == 2, argv
        assert "--cluster all only reads" in capsys.readouterr().err
