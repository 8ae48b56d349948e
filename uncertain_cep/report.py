"""A standalone HTML report of one query over an index.

One self-contained page (no external files, styles or scripts: it can be mailed or archived)
with what a reader needs to trust an answer: the index it ran on
(:meth:`~uncertain_cep.api.UncertainIndex.describe`), the query, the plan and its counters
(:class:`~uncertain_cep.query.evaluation.explain.Explanation`: per step the items matched,
estimated vs actual candidates, entries, range queries, time), the answer's top rows and the
timeline of :meth:`QueryResult.plot <uncertain_cep.results.QueryResult.timeline>` embedded
as a PNG. The full answer goes to Parquet or CSV beside it (``uncertain-cep report
--table``).

>>> import pandas as pd
>>> import uncertain_cep as uc
>>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0,
...     "t_lo": [0, 2], "t_hi": [1, 3], "x_lo": [0.0, 5.0], "x_hi": [1.0, 6.0]}))
>>> page, res = html_report(idx, "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x > 4")
>>> page.startswith("<!DOCTYPE html>"), "data:image/png;base64," in page, len(res)
(True, True, 1)
"""

from __future__ import annotations

import base64
import html
import io
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from uncertain_cep.errors import MissingDependencyError
from uncertain_cep.files import atomic_write
from uncertain_cep.optional import require_matplotlib
from uncertain_cep.results import QueryResult

if TYPE_CHECKING:
    from uncertain_cep.api import UncertainIndex

__all__ = ["html_report", "write_html_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em;
     margin-top: 1.8em; }
pre { background: #f5f5f5; padding: 0.8em; border-radius: 4px; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f0f0f0; }
td:first-child { text-align: left; }
.meta { color: #666; font-size: 0.9em; }
img { max-width: 100%; border: 1px solid #eee; }
"""


def html_report(index: UncertainIndex, query: str, strategy: str = "selectivity", *,
                top: int = 100, timeline_rows: int = 20, source: str | None = None,
                table_file: str | None = None) -> tuple[str, QueryResult]:
    """Evaluate ``query`` on ``index`` and lay it out as one HTML page.

    Parameters
    ----------
    index
        The index to query.
    query
        Part-A query text (SEMANTICS C).
    strategy
        As for :meth:`~uncertain_cep.api.UncertainIndex.query`.
    top
        Answer rows shown in the page's table (the full answer is the second value).
    timeline_rows
        Tuples drawn in the timeline.
    source, table_file
        Where the index came from and where the full answer was written, if anywhere;
        only shown.

    Returns
    -------
    (str, QueryResult)
        The page and the answer.
    """
    explanation = index.explain(query, strategy=strategy)
    answer = explanation.answer
    assert isinstance(answer, QueryResult)
    shown = pd.DataFrame(answer.head(max(int(top), 0)))
    shown["events"] = [", ".join(map(str, e)) for e in shown["events"]]
    more = len(answer) - len(shown)
    notes = []
    if more > 0:
        notes.append(f"the {len(shown)} most confident of {len(answer)} rows")
    if table_file:
        notes.append(f"the full answer is in <code>{html.escape(table_file)}</code>")
    from uncertain_cep import __version__

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>uncertain-cep report: {html.escape(answer.summary())}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>uncertain-cep report</h1>",
        f"<p class='meta'>{html.escape(stamp)} &middot; uncertain-cep {__version__}"
        + (f" &middot; index <code>{html.escape(source)}</code>" if source else "")
        + "</p>",
        "<h2>Query</h2>", f"<pre>{html.escape(query)}</pre>",
        f"<p><b>{html.escape(answer.summary())}</b></p>",
        "<h2>Plan and counters</h2>", f"<p>{html.escape(explanation.summary())}</p>",
        explanation.steps_frame().to_html(index=False, border=0),
        "<h2>Timeline</h2>",
        "<p class='meta'>Each row is a matched tuple (most confident on top); each bar is "
        "one event's possible instants, coloured by the pattern item it matched.</p>",
        _timeline_img(answer, timeline_rows),
        "<h2>Answer</h2>",
        (f"<p class='meta'>{'; '.join(notes)}.</p>" if notes else ""),
        shown.to_html(index=False, float_format=lambda x: f"{x:.6g}", border=0)
        if len(shown) else "<p>No tuple reaches the confidence threshold.</p>",
        "<h2>Index</h2>", index.describe()._repr_html_(),
        "</body></html>",
    ]
    return "\n".join(parts), answer


def write_html_report(path: str | os.PathLike[str], page: str) -> None:
    """Write ``page`` to ``path`` atomically (never a half-written report)."""
    atomic_write(Path(path), lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))


def _timeline_img(answer: QueryResult, rows: int) -> str:
    """The timeline as an inline PNG; without matplotlib (the plot extra), a line saying
    how to get it: the rest of the report needs no plotting."""
    try:
        png = _timeline_png(answer, rows)
    except MissingDependencyError as e:
        return f"<p class='meta'>{html.escape(str(e))}.</p>"
    return (f"<img alt='timeline of the matched events' src='data:image/png;base64,"
            f"{png}'>")


def _timeline_png(answer: QueryResult, rows: int) -> str:
    # A Figure of its own (no pyplot state): the report neither needs nor changes the
    # caller's matplotlib backend.
    require_matplotlib("the report's timeline")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 0.45 * max(min(len(answer), rows), 1) + 1.4))
    answer.plot(top=rows, ax=figure.add_subplot())
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
