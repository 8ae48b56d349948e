"""A damaged index never answers and never crashes (issue 44, item 6): every file of a
saved index is damaged in turn (a flipped byte, truncated, emptied, swapped with another
file), and opening and querying it gives an IndexFormatError naming that file, or, for a
file no open or query of the case reads (what the working copy is made of, when the host
has it), the very answers of the undamaged index. A damaged working copy is made again
from the index's files: the answers are the undamaged index's.

The cases run in one child process, one after another, each reporting before the next
starts: a crash (a kernel reading out of bounds) fails the test and names the case."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from index_checks import rewrite_packed_node_column

import uncertain_cep as uc
from uncertain_cep.index.store.checksums import CHECKSUM

QUERIES = [
    ("PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0 WITHIN 10", "selectivity"),
    ("PATTERN SEQ(A, NOT C, B) DEFINE A AS x < 3, C AS x >= 3, B AS x >= 0 WITHIN 30",
     "selectivity"),
    # The baselines walk forests built again from the archive.
    ("PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0 WITHIN 10", "tree_traversal"),
]
# Files every open reads: damage there must be refused however it is used; with no
# working copy on the host, every file is read.
USED_AT_OPEN = ("manifest.json", "stats/")

_CHILD = """
import json, sys
import uncertain_cep as uc
from uncertain_cep.errors import UncertainCepError
queries = json.loads(sys.argv[1])
import os
default_cache = os.environ["UNCERTAIN_CEP_CACHE"]
for line in sys.stdin:
    case = json.loads(line)
    os.environ["UNCERTAIN_CEP_CACHE"] = case.get("cache") or default_cache
    out = {"case": case["name"]}
    try:
        idx = uc.open_index(case["path"], verify=case["verify"])
        out["answers"] = [idx.query(q, strategy=s).to_json(orient="split", double_precision=15)
                          for q, s in queries]
    except UncertainCepError as e:
        out["error"] = type(e).__name__
        out["message"] = str(e)
    print(json.dumps(out), flush=True)
"""


def _archive() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 14
    lo = np.sort(rng.integers(0, 20, n))
    return pd.DataFrame({"event_id": np.arange(100, 100 + n), "group": rng.integers(0, 3, n),
                         "t_lo": lo, "t_hi": lo + rng.integers(0, 4, n),
                         "x": rng.uniform(0, 6, n).round(2)})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("damage") / "ix"
    uc.build_index(_archive()).save(path)
    return path


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _run(cases: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    """Open and query each case's index in one child process; fail on a crash, naming
    the case it was in."""
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(QUERIES)],
                          input="".join(json.dumps(c) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=600)
    results = {r["case"]: r for r in map(json.loads, done.stdout.splitlines())}
    if done.returncode != 0:
        crashed = next((c["name"] for c in cases if c["name"] not in results), "?")
        pytest.fail(f"the child process ended with {done.returncode} in case {crashed}: "
                    f"{done.stderr[-2000:]}")
    return results


def _damage(root: Path, name: str, kind: str, at: float, other: str) -> None:
    path = root / name
    data = bytearray(path.read_bytes())
    if kind == "flip" and data:
        data[int(at * len(data))] ^= 0xFF
    elif kind == "truncate":
        data = data[:int(at * len(data))]
    elif kind == "empty":
        data = bytearray()
    elif kind == "swap":
        data, theirs = bytearray((root / other).read_bytes()), bytes(data)
        (root / other).write_bytes(theirs)
    path.write_bytes(bytes(data))


def _check(result: dict[str, object], names: tuple[str, ...], want: object,
           verify: bool, cold: bool) -> None:
    if "error" not in result:
        # Only a file this open and these queries never read may go unnoticed; the
        # answers are then the undamaged index's.
        assert not verify and not cold and not names[0].startswith(USED_AT_OPEN), \
            (names, result)
        assert result["answers"] == want, names
        return
    assert result["error"] == "IndexFormatError", result
    assert any(n in str(result["message"]) for n in names), (names, result["message"])


def _damage_each(saved: Path, work: Path, plan) -> None:
    """Damage every file of ``saved`` in a copy of its own (``plan(name)`` gives the kind,
    the position as a fraction of the file and the file to swap with), open and query each
    in one child process, and check each case."""
    files = _files(saved)
    want = _run([{"name": "intact", "path": str(saved), "verify": True}])["intact"]
    cold = 0
    assert "answers" in want and all(json.loads(a)["data"] for a in want["answers"][:2])
    cases, expected = [], {}
    for k, name in enumerate(files):
        kind, at, other = plan(name, [f for f in files if f != name])
        root = work / f"case-{k}"
        shutil.copytree(saved, root)
        _damage(root, name, kind, at, other)
        names = (name, other) if kind == "swap" else (name,)
        if all((root / n).read_bytes() == (saved / n).read_bytes() for n in names):
            continue                     # a swap of two equal files damages nothing
        # With the working copy the save left, and with none (a host opening the index
        # first: its own empty cache).
        for verify, empty_cache in ((False, False), (True, False), (False, True)):
            case = f"{kind} {name}" + (f" with {other}" if kind == "swap" else "") + \
                (" verify" if verify else "") + (" cold" if empty_cache else "")
            cold += empty_cache
            cases.append({"name": case, "path": str(root), "verify": verify,
                          "cache": str(work / f"cache-{cold}") if empty_cache else None})
            expected[case] = (names, verify, empty_cache)
    results = _run(cases)
    for case, (names, verify, empty_cache) in expected.items():
        _check(results[case], names, want["answers"], verify, empty_cache)


def test_the_middle_byte_of_any_file_flipped_is_refused(saved, tmp_path):
    _damage_each(saved, tmp_path, lambda name, others: ("flip", 0.5, others[0]))


def _working_copy(saved: Path, cache: Path) -> Path:
    """A cache of its own holding ``saved``'s working copy; the copy's folder."""
    from uncertain_cep.index.store.reader import open_reader
    from uncertain_cep.index.store.working_copy import working_copy

    reader = open_reader(saved)
    source = working_copy(reader.root, reader.manifest, verified=True)
    shutil.copytree(source, cache / source.name)
    return cache / source.name


def test_any_damaged_file_of_the_working_copy_is_made_again(saved, tmp_path):
    # The reproducer: depth.npy and child_start.npy answered other confidences,
    # parent.npy, child_list.npy and child_root.npy crashed the NOT query.
    want = _run([{"name": "intact", "path": str(saved), "verify": False}])["intact"]
    files = _files(_working_copy(saved, tmp_path / "probe"))
    cases = []
    for k, name in enumerate(f for f in files if f != "working.json"):
        copy = _working_copy(saved, tmp_path / f"cache-{k}")
        _damage(copy, name, "flip" if k % 2 else "truncate", 0.5, "")
        cases.append({"name": name, "path": str(saved), "verify": False,
                      "cache": str(copy.parent)})
    for name, result in _run(cases).items():
        assert result.get("answers") == want["answers"], (name, result)


# Every example damages every file of the index in one way each (about 90 cases, opened
# by one child process: 10 to 20 s).
@settings(max_examples=2)
@given(data=st.data())
def test_every_damaged_file_is_refused_naming_it(saved, tmp_path_factory, data):
    def plan(name: str, others: list[str]) -> tuple[str, float, str]:
        return (data.draw(st.sampled_from(["flip", "truncate", "empty", "swap"]), name),
                data.draw(st.floats(0, 1, exclude_max=True), f"{name} at"),
                data.draw(st.sampled_from(others), f"{name} with"))

    _damage_each(saved, tmp_path_factory.mktemp("cases"), plan)


def _reseal(copy: Path) -> None:
    """Record a working copy's current checksums (as a program writing its own copy
    would), so that only the column checks stand between them and the kernels."""
    from uncertain_cep.index.store.working_copy import seal

    seal(copy)


ID_COLUMNS = ["group", "row", "tree", "kind", "parent", "depth", "child_list", "child_root",
              "row_nodes", "tree_parent", "tree_level", "tree_virtual", "tree_root",
              "group_start", "tree_start", "row_nodes_start", "child_start"]


@settings(max_examples=1)
@given(value=st.sampled_from([-2, 10**6, 2**62, -(2**63)]), data=st.data())
def test_ids_out_of_range_with_valid_checksums_are_caught_and_made_again(
        saved, tmp_path_factory, value, data):
    # The column checks catch what a kernel could not index with (else a crash or a
    # wrong answer): the copy is then made again from the index's files.
    work = tmp_path_factory.mktemp("ids")
    want = _run([{"name": "intact", "path": str(saved), "verify": False}])["intact"]
    cases = []
    for column in [*ID_COLUMNS, "event_columns/group_code", "event_columns/_uc_pos"]:
        name = column if "/" in column else f"columns/{column}"
        copy = _working_copy(saved, work / column.replace("/", "-"))
        array = np.load(copy / f"{name}.npy")
        at = data.draw(st.integers(0, len(array) - 1), column)
        info = np.iinfo(array.dtype)           # kind is int8
        array[at] = min(max(value, info.min), info.max) if value != 10**6 else info.max
        np.save(copy / f"{name}.npy", array)
        _reseal(copy)
        cases.append({"name": column, "path": str(saved), "verify": False,
                      "cache": str(copy.parent)})
    for column, result in _run(cases).items():
        assert result.get("answers") == want["answers"], (column, result)


def test_a_parent_cycle_with_valid_checksums_is_refused(saved, tmp_path):
    from uncertain_cep.index.node_table import NodeTable
    from uncertain_cep.index.store.column_checks import check_node_table
    from uncertain_cep.index.store.node_columns import open_node_columns

    copy = _working_copy(saved, tmp_path / "cache")
    parent = np.load(copy / "columns" / "parent.npy")
    child = int(np.flatnonzero(parent >= 0)[0])
    parent[int(parent[child])] = child          # its parent's parent is the child itself
    np.save(copy / "columns" / "parent.npy", parent)
    table: NodeTable = open_node_columns(copy / "columns")
    with pytest.raises(uc.IndexFormatError, match=r"columns/parent\.npy holds at position"):
        check_node_table(table, copy / "columns", n_rows=len(_archive()), n_groups=3)


def test_a_packed_file_with_valid_checksums_but_foreign_numbers_is_refused(saved, tmp_path):
    # A packed node table whose numbers are out of range, its checksums rewritten (as a
    # program writing its own index would): expanded, then refused by the column checks.
    root = tmp_path / "ix"
    shutil.copytree(saved, root)

    def out_of_range(column):
        column = column.copy()
        column[0] = np.iinfo(column.dtype).max
        return column

    rewrite_packed_node_column(root, "tree", out_of_range)
    result = _run([{"name": "foreign", "path": str(root), "verify": False,
                    "cache": str(tmp_path / "cache")}])["foreign"]
    assert result.get("error") == "IndexFormatError", result
    assert "columns/tree.npy" in str(result["message"]), result["message"]


def test_an_index_of_format_version_7_is_refused_asking_for_a_rebuild(saved, tmp_path):
    root = tmp_path / "ix"
    shutil.copytree(saved, root)
    data = json.loads((root / "manifest.json").read_text())
    data["format_version"] = 7
    data["sha256"] = data.pop(CHECKSUM)
    (root / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(uc.IndexFormatError, match=r"format version 7.*rebuild the index"):
        uc.open_index(root)
    # Still recognised as an index, so saving over it replaces it.
    uc.build_index(_archive()).save(root)
    assert uc.open_index(root).n_events == len(_archive())
