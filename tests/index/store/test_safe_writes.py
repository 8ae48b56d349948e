"""Writing an index never deletes what is not an index: only an absent or empty
directory, or an index holding nothing but its own files, may be replaced."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep import cli


def _archive() -> pd.DataFrame:
    return pd.DataFrame({"event_id": [1, 2, 3], "group": ["p", "p", "q"],
                         "t_lo": [1, 2, 1], "t_hi": [2, 3, 3], "x": [0.0, 1.0, 2.0]})


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_site_with_a_manifest_json_is_not_replaced(tmp_path, capsys):
    site = tmp_path / "site"
    site.mkdir()
    (site / "manifest.json").write_text("{}")
    (site / "index.html").write_text("hi")
    archive = tmp_path / "archive.parquet"
    _archive().to_parquet(archive)
    with pytest.raises(uc.IndexFormatError, match="not an uncertain-cep index"):
        uc.build_index(_archive()).save(site)
    assert cli.main(["build", str(archive), "--out", str(site), "--engine", "local"]) == 1
    assert "refusing to replace" in capsys.readouterr().err
    assert (site / "index.html").read_text() == "hi"
    assert _leftovers(tmp_path) == []


def test_an_index_with_a_foreign_file_is_not_replaced(tmp_path):
    out = tmp_path / "ix"
    uc.build_index(_archive()).save(out)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(uc.IndexFormatError, match=r"notes\.txt"):
        uc.build_index(_archive()).save(out)
    assert (out / "notes.txt").read_text() == "mine"
    assert uc.open_index(out).n_events == 3


def test_an_index_is_replaced_by_a_new_one(tmp_path):
    out = tmp_path / "ix"
    uc.build_index(_archive()).save(out)
    uc.build_index(_archive().iloc[:2]).save(out)
    assert uc.open_index(out).n_events == 2
    assert _leftovers(tmp_path) == []


def test_an_index_of_another_format_version_is_still_replaced(tmp_path):
    out = tmp_path / "ix"
    uc.build_index(_archive()).save(out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["format_version"] = 1
    (out / "manifest.json").write_text(json.dumps(manifest))
    uc.build_index(_archive()).save(out)
    assert uc.open_index(out).n_events == 3


def test_the_input_folder_is_never_the_output(tmp_path, capsys):
    lake = tmp_path / "lake"
    lake.mkdir()
    _archive().to_parquet(lake / "part-0.parquet")
    assert cli.main(["build", str(lake), "--out", str(lake), "--engine", "local"]) == 1
    assert "refusing to replace" in capsys.readouterr().err
    assert (lake / "part-0.parquet").is_file()


def test_a_regular_file_as_out_is_a_clear_error(tmp_path):
    target = tmp_path / "ix"
    target.write_text("data")
    with pytest.raises(uc.IndexFormatError, match="is a file"):
        uc.build_index(_archive()).save(target)
    assert target.read_text() == "data"


def test_a_link_to_an_index_keeps_pointing_at_the_new_index(tmp_path):
    real = tmp_path / "real"
    uc.build_index(_archive()).save(real)
    link = tmp_path / "current"
    os.symlink(real, link)
    uc.build_index(_archive().iloc[:2]).save(link)
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    assert uc.open_index(link).n_events == 2
    assert _leftovers(tmp_path) == []


def test_the_spark_build_refuses_its_input_as_output_before_starting_spark(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    _archive().to_parquet(lake / "part-0.parquet")
    with pytest.raises(uc.IndexFormatError, match="refusing to replace"):
        uc.build_index_spark(lake, lake)
    assert (lake / "part-0.parquet").is_file()


def test_a_draft_left_by_a_killed_build_is_removed_by_the_next_build(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "ix"
    code = ("import os, sys; from uncertain_cep.index.store.drafts import IndexDraft; "
            "d = IndexDraft(sys.argv[1]); (d.path / 'events').mkdir(); os._exit(9)")
    subprocess.run([sys.executable, "-c", code, str(out)], timeout=120)
    assert len(_leftovers(tmp_path)) == 1
    uc.build_index(_archive()).save(out)
    assert _leftovers(tmp_path) == []


def test_a_draft_of_a_running_build_is_left_alone(tmp_path):
    from uncertain_cep.index.store.drafts import IndexDraft

    out = tmp_path / "ix"
    running = IndexDraft(out)
    try:
        uc.build_index(_archive()).save(out)
        assert running.path.is_dir()
    finally:
        running.discard()


def test_a_full_disk_fails_the_save_clearly_and_keeps_the_old_index(tmp_path, monkeypatch):
    # libspatialindex meets a full disk with "iostream error" or a crash: the space its
    # bulk load needs is checked before it starts.
    from collections import namedtuple

    from uncertain_cep.index.store import rtree_and_statistics

    out = tmp_path / "ix"
    uc.build_index(_archive()).save(out)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(rtree_and_statistics.shutil, "disk_usage",
                        lambda path: usage(1 << 30, 1 << 30, 0))
    with pytest.raises(uc.IndexBuildError, match=r"not enough disk space to write the "
                       r"R\*-tree of 2 events in .*: 0 MB free, about 1 MB needed"):
        uc.build_index(_archive().iloc[:2]).save(out)
    monkeypatch.undo()
    assert uc.open_index(out).n_events == 3
    assert _leftovers(tmp_path) == []
