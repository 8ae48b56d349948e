"""examples/quickstart.ipynb runs top to bottom, in a kernel of this environment, and shows
what its text says it shows.

The notebook is committed without outputs; executing it here keeps it in step with the
API. It needs no Spark and takes a few seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from notebook_kernels import kernelspec

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")  # the bench/dev dependency group: the notebook plots

# One worker executes the notebook once for every test here (and never the Spark worker's).

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOK = EXAMPLES / "quickstart.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("notebook")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(kernelspec(tmp / "jupyter")))
        mp.setenv("JUPYTER_RUNTIME_DIR", str(tmp / "runtime"))
        mp.setenv("IPYTHONDIR", str(tmp / "ipython"))  # no user profile or startup files
        mp.delenv("MPLBACKEND", raising=False)  # figures through the kernel's inline backend
        from jupyter_client.kernelspec import KernelSpecManager

        assert KernelSpecManager().get_kernel_spec("python3").argv[0] == sys.executable
        nb = nbformat.read(NOTEBOOK, as_version=4)
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(EXAMPLES)}})
        client.execute()
    return nb


def test_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    assert all(not c.outputs and c.execution_count is None for c in code), \
        "clear the notebook's outputs before committing it"


def _cell(nb: Any, fragment: str) -> Any:
    """The one code cell whose source contains ``fragment``."""
    found = [c for c in nb.cells if c.cell_type == "code" and fragment in c.source]
    assert len(found) == 1, f"{len(found)} code cells contain {fragment!r}"
    return found[0]


def _data(cell: Any, mime: str) -> list[str]:
    return [o.data[mime] for o in cell.outputs
            if o.output_type in ("execute_result", "display_data") and mime in o.data]


def _stdout(cell: Any) -> str:
    return "".join(o.text for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stdout")


def test_runs_without_errors_or_warnings(executed: Any) -> None:
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    for c in code:
        for o in c.outputs:
            assert o.output_type != "error", f"{c.source!r} raised {o.ename}: {o.evalue}"
            assert not (o.output_type == "stream" and o.name == "stderr"), \
                f"{c.source!r} wrote to stderr: {o.text}"


def test_index_description(executed: Any) -> None:
    (html,) = _data(_cell(executed, "summary = idx.describe()"), "text/html")
    assert "480 events in 12 groups (person)" in html
    assert "max speed 2" in html
    assert _data(_cell(executed, "summary.plot()"), "image/png")
    (reopened,) = _data(_cell(executed, "reopened = uc.open_index(path)"), "text/html")
    assert "480 events in 12 groups" in reopened and "office.idx" in reopened


def test_queries_answers_timelines_and_plans(executed: Any) -> None:
    (answer,) = _data(_cell(executed, "res = idx.query(corridor_skip)"), "text/html")
    assert "uncertain-cep-result" in answer and "25 matches" in answer
    assert "<table" in answer and "confidence" in answer
    for timeline in ("res.plot(", "idx.query(relay).plot("):
        assert _data(_cell(executed, timeline), "image/png"), timeline
    (plan,) = _data(_cell(executed, "idx.explain(corridor_skip)"), "text/html")
    assert "entries created" in plan and "range queries" in plan
    assert "115 tuples" in _stdout(_cell(executed, "res = idx.query(west_to_east)"))
    assert _data(_cell(executed, '"sequential", "tree_traversal"'), "text/plain") == ["True"]
    assert _data(_cell(executed, "answers_equal ="), "text/plain") == ["(True, True)"]


def test_temporal_pattern(executed: Any) -> None:
    cell = _cell(executed, "matches = uc.match(cars, aggressive_drivers")
    (table,) = _data(cell, "text/html")
    assert "<table" in table
    for column in ("car_id", "A_ts", "C_te", "avg_speed", "detected_at"):
        assert f"<th>{column}</th>" in table
    engines = _cell(executed, 'engine="automata"')
    assert "aggressive episodes in" in _stdout(engines)
    assert _data(engines, "text/plain") == ["True"]


def test_instants_with_a_distribution(executed: Any) -> None:
    (summary,) = _data(_cell(executed, "widx = uc.build_index(jitter"), "text/html")
    assert "weighted (SEMANTICS A6) for 480 of 480 events" in summary
    compared = _cell(executed, "compared = (idx.query(relay)")
    assert "matches with the distribution" in _stdout(compared)
    (table,) = _data(compared, "text/html")
    assert "confidence weighted" in table and "confidence equal" in table
    assert _data(_cell(executed, "weighted.plot("), "image/png")
