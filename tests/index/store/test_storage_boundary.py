"""Storage behind one door: no module outside ``uncertain_cep.index`` names a file, a table
directory or an internal column of the on-disk format.

The names come from :data:`uncertain_cep.index.store.layout.FORMAT_NAMES`, so this test
follows the format. A module outside the index reads an index through
:mod:`uncertain_cep.index.store.reader` and writes one through
:mod:`uncertain_cep.index.store.storage`.
Docstrings are prose and are not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from project_modules import modules
from test_layers import imports

from uncertain_cep.index.store.layout import FORMAT_NAMES

INSIDE = "uncertain_cep.index"


def _outside() -> list[str]:
    return sorted(m for m in modules() if m != INSIDE and not m.startswith(INSIDE + "."))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.add(id(body[0].value))
    return out


def violations(source: str) -> list[str]:
    """What a module's source names of the format: ``line: text`` per offence."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    columns = set(FORMAT_NAMES.columns)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            # A path join: root / "events", root / "stats/time.parquet".
            right = node.right
            if isinstance(right, ast.Constant) and isinstance(right.value, str):
                first = right.value.split("/")[0]
                if first in FORMAT_NAMES.tables:
                    found.append(f"{node.lineno}: joins the table directory {right.value!r}")
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in skip:
            continue
        text = node.value
        if text in columns:
            found.append(f"{node.lineno}: names the format's column {text!r}")
        for name in FORMAT_NAMES.files:
            if name in text:
                found.append(f"{node.lineno}: names the format's file {name!r} in {text!r}")
        for table in FORMAT_NAMES.tables:
            if text.startswith(f"{table}/") or f"/{table}/" in text:
                found.append(f"{node.lineno}: names a path in the table {table!r}: {text!r}")
    return found


def test_the_format_names_are_not_empty():
    assert "manifest.json" in FORMAT_NAMES.files
    assert {"events", "nodes", "trees"} <= set(FORMAT_NAMES.tables)
    assert {"_uc_t_max", "compact_code", "child_tree"} <= set(FORMAT_NAMES.columns)
    # The archive's own columns belong to the archive, not to the format.
    assert not {"event_id", "t_lo", "t_hi", "group"} & set(FORMAT_NAMES.columns)


def test_the_scan_sees_what_the_old_modules_named():
    old = '''
def times(root, ids):
    """Reads root / "events" (a docstring may say so)."""
    frame = ds.dataset(root / "events", format="parquet")
    filt = pads.field("_uc_t_max") >= 3
    stats = root / "stats" / "time.parquet"
    nodes = pads.field("child_tree") >= 0
    name = f"part-{k:05d}.parquet"
    return json.loads((root / "manifest.json").read_text())
'''
    found = "\n".join(violations(old))
    for bit in ("'events'", "'_uc_t_max'", "'stats'", "'time.parquet'", "'child_tree'",
                "'part-'", "'manifest.json'"):
        assert bit in found, bit
    assert "docstring" not in found and ": 3:" not in f": {found}"
    assert violations('x = {"event_id": 1, "t_lo": 2, "group": "g", "events": []}') == []


# Writes answers of any size row group by row group (pandas writes whole tables only);
# it reads no index table.
_ANSWER_WRITERS = {"uncertain_cep.answer_streams"}


@pytest.mark.parametrize("module", [m for m in _outside() if m not in _ANSWER_WRITERS])
def test_no_module_outside_the_index_reads_parquet_itself(module):
    # Archives and answers are read and written through pandas or Spark; the index's
    # tables only through the index.
    parquet = sorted(i for i in imports(modules()[module], module)
                     if i.startswith(("pyarrow.parquet", "pyarrow.dataset")))
    assert not parquet, (f"{module} imports {parquet}: an index's tables are read through "
                         "uncertain_cep.index.store.reader")


@pytest.mark.parametrize("module", _outside())
def test_no_module_outside_the_index_names_the_format(module):
    path = modules()[module]
    found = violations(Path(path).read_text())
    assert not found, (
        f"{module} ({path}) names the on-disk format: " + "; ".join(found)
        + ". Read an index through uncertain_cep.index.store.reader (IndexReader) and write one "
        "through uncertain_cep.index.store.storage; if a name is the archive's or a plain word, "
        "not the format's, adjust FormatNames in index/store/layout.py")
