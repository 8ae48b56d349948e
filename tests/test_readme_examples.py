"""The README's in-process examples run as written (issue "Spark SQL access, a quiet
console": "the README's examples updated"): every ``python`` block of its section "In a
notebook", in order, in one namespace, from a scratch directory (the bundled sample's
path made absolute). The Spark examples name clusters and buckets; their functions are
tested in tests/pipeline."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _notebook_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## In a notebook\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_readme_notebook_section_has_examples():
    assert len(_notebook_blocks()) >= 2


def test_every_notebook_example_of_the_readme_runs(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in _notebook_blocks():
        code = re.sub(r"([\"'])datasets/", rf"\g<1>{ROOT.as_posix()}/datasets/", block)
        exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "office.idx").is_dir()
    assert os.listdir(tmp_path / "office.idx")
