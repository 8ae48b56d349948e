"""The examples in every module's docstrings run and print what they show.

Collected here by module name (not by pytest's ``--doctest-modules``, which names a module
by its folder: ``index/forests/codes.py`` would be imported a second time as ``index.codes``)."""

from __future__ import annotations

import doctest
import importlib

import pytest
from project_modules import modules

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("name", sorted(modules()))
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
