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


def test_the_tui_opens_one_cluster(tmp_path, capsys):
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\n')
    assert cli.main(["--config", cfg, "--cluster", "all"]) == 2
    assert "headless commands" in capsys.readouterr().err


def test_cluster_all_never_acts(tmp_path, capsys):
    """Job ids and node names are per cluster: one --yes must not act on every cluster."""
    cfg = _cfg(tmp_path, '[clusters.a]\nbackend = "demo"\n\n[clusters.b]\nbackend = "demo"\n')
    for argv in (["job", "cancel", "48213", "--yes"], ["node", "drain", "dgx006", "--reason", "x", "--yes"],
                 ["exec", "dgx001", "--", "true"]):
        assert cli.main(["--config", cfg, "--cluster", "all", *argv]) == 2, argv
        assert "--cluster all only reads" in capsys.readouterr().err
