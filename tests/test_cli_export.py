"""``convlab export``: every conversation of a log written out again, one file each, read back as the same tree;
``convlab show`` prints labels."""

from __future__ import annotations

import warnings

import pytest

import convlab
from convlab.cli.main import main

from realdata import real  # noqa: F401  (the fixture)


def labelled_log(tmp_path):
    path = tmp_path / "s.jsonl"
    s = convlab.Session(log=path)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "weather in LA?"}]})
    s.label("e1", "the NYC answer")
    return path


def test_export_writes_pi_files_that_read_back_with_branches_head_and_labels(tmp_path, capsys):
    log = labelled_log(tmp_path)
    out = tmp_path / "out"
    assert main(["export", str(log), "--format", "pi", "--out", str(out)]) == 0
    written = capsys.readouterr().out.split()
    assert written == [str(out / "s.jsonl")]
    (c,) = convlab.read(written[0])
    (orig,) = convlab.read(log)
    assert c.format == "pi" and c.head == orig.head and c.labels() == {"e1": "the NYC answer"}
    assert sorted(c.tree.edges) == sorted(orig.tree.edges)


def test_export_refuses_files_already_there_unless_told(tmp_path, capsys):
    log = labelled_log(tmp_path)
    out = tmp_path / "out"
    assert main(["export", str(log), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(log), "--out", str(out)]) == 2
    assert "already there" in capsys.readouterr().err
    assert main(["export", str(log), "--out", str(out), "--overwrite", "--format", "chatgpt"]) == 0
    assert main(["export", str(log), "--out", str(log)]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["export", str(log), "--out", str(out), "--format", "docx"]) == 2


def test_show_prints_the_labels(tmp_path, capsys):
    assert main(["show", str(labelled_log(tmp_path)), "--width", "72"]) == 0
    assert "[label: the NYC answer]" in capsys.readouterr().out


@pytest.mark.realdata
def test_export_every_real_openassistant_tree_to_chatgpt_and_back(real, tmp_path, capsys):  # noqa: F811
    assert main(["export", str(real / "oasst"), "--format", "chatgpt", "--out", str(tmp_path), "--quiet"]) == 0
    files = capsys.readouterr().out.split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        origs = {c.id: c for c in convlab.read(real / "oasst")}
        backs = [c for f in files for c in convlab.read(f)]
    assert len(files) == len(origs) == len(backs) == 60
    for c in backs:
        assert sorted(c.tree.edges) == sorted(origs[c.id].tree.edges) and c.head == origs[c.id].head
