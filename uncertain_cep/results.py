"""A query's answer as a DataFrame that knows its query: notebook display and a timeline.

:meth:`UncertainIndex.query <uncertain_cep.api.UncertainIndex.query>` returns a
:class:`QueryResult`: the answer table of SEMANTICS A4 (``events``, ``confidence``,
``t_first``, ``t_last``; one row per tuple) plus what the display needs -- the query text,
the pattern's positive items (the symbols the tuple's events matched, in order) and each
matched event's possible instants ``[t_lo, t_hi]``. Everything a DataFrame does works as
usual; frames derived from it (``res.head()``, ``res[res.confidence > .5]``) are plain
DataFrames, so nothing stale travels with them.

* In Jupyter it shows as a compact HTML block: the number of matches, the confidence
  range, the query, and the top rows (``_repr_html_``).
* :meth:`QueryResult.plot` draws the timeline: per matched tuple (top rows first) each
  event as its possible-time interval, coloured by pattern item, with the confidence.
  Pandas' own plotting stays reachable as ``res.plot.bar(...)`` and the like.

>>> import pandas as pd
>>> res = QueryResult.of(pd.DataFrame({"events": [(1, 2)], "confidence": [0.75],
...                                     "t_first": [0], "t_last": [3]}),
...                      query="PATTERN SEQ(A, B) ...", items=("A", "B"),
...                      event_times={1: (0, 1), 2: (2, 3)})
>>> res.summary()
'1 match, confidence 0.75'
>>> type(res.head()).__name__
'DataFrame'
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError

__all__ = ["QueryResult"]

# Rows shown in the notebook display and drawn by default in the timeline.
_SHOWN = 10
_DRAWN = 20


class QueryResult(pd.DataFrame):
    """The answer of an uncertain sequence query (SEMANTICS A4) with its context.

    Build one with :meth:`of`; the index's ``query`` does. Attributes beyond the
    DataFrame's (named so as not to hide ``DataFrame.query`` and ``DataFrame.items``):
    ``query_text``, ``pattern_items`` (the positive items' symbols in pattern order) and
    ``event_times`` (event id -> ``(t_lo, t_hi)``, for the matched events).
    """

    _metadata: ClassVar[list[str]] = ["query_text", "pattern_items", "event_times"]
    query_text: str
    pattern_items: tuple[str, ...]
    event_times: dict[Any, tuple[int, int]]

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        # Derived frames drop the context: it describes this exact answer.
        return pd.DataFrame

    @classmethod
    def of(cls, frame: pd.DataFrame, *, query: str, items: Sequence[str],
           event_times: Mapping[Any, tuple[int, int]]) -> QueryResult:
        """Wrap an answer table (its columns and ``attrs`` are kept as they are)."""
        out = cls(frame)
        out.attrs = dict(frame.attrs)
        out.query_text = query
        out.pattern_items = tuple(items)
        out.event_times = dict(event_times)
        return out

    # ------------------------------------------------------------ display
    def summary(self) -> str:
        """One line: how many matches and their confidence range."""
        n = len(self)
        if n == 0:
            return "no match"
        low, high = float(self["confidence"].min()), float(self["confidence"].max())
        spread = f"{low:.4g}" if low == high else f"{low:.4g} to {high:.4g}"
        return f"{n} match{'es' if n != 1 else ''}, confidence {spread}"

    def _repr_html_(self) -> str | None:
        stats = self.attrs.get("stats", {})
        strategy = f" ({html.escape(str(stats['strategy']))})" if "strategy" in stats else ""
        shown = pd.DataFrame(self.head(_SHOWN))
        more = len(self) - len(shown)
        rest = f"<p>... and {more} more</p>" if more > 0 else ""
        table = shown.to_html(index=False, float_format=lambda x: f"{x:.6g}") \
            if len(shown) else ""
        return (f"<div class='uncertain-cep-result'><p><b>{html.escape(self.summary())}"
                f"</b>{strategy}</p><pre style='font-size:90%'>{html.escape(self.query_text)}"
                f"</pre>{table}{rest}</div>")

    # ------------------------------------------------------------ timeline
    @property
    def plot(self) -> _Plot:  # type: ignore[override]
        """``res.plot()`` draws the timeline (:meth:`timeline`); ``res.plot.<kind>`` is
        pandas' plotting."""
        return _Plot(self)

    def timeline(self, top: int = _DRAWN, ax: Any = None) -> Any:
        """Draw the ``top`` most confident tuples as a timeline and return the Axes.

        Each tuple is one row (most confident at the top); each of its events is a bar
        over its possible instants ``[t_lo, t_hi + 1)`` (Zhou et al. 3.1: the event
        happened at one of them), coloured by the pattern item it matched; the
        confidence is written at the row's end.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(9, 0.45 * max(min(len(self), top), 1) + 1.4))
        rows = pd.DataFrame(self.head(max(int(top), 0)))
        colours = plt.get_cmap("tab10")
        right = 0.0
        for position, (events, confidence) in enumerate(zip(rows["events"],
                                                            rows["confidence"])):
            y = len(rows) - 1 - position
            for item, event in enumerate(events):
                if event not in self.event_times:
                    raise InputError(f"event {event!r} of row {position} has no possible "
                                     "times in this result; plot the index's own answer")
                lo, hi = self.event_times[event]
                ax.barh(y, hi + 1 - lo, left=lo, height=0.6,
                        color=colours(item % 10), edgecolor="black", linewidth=0.5)
                right = max(right, hi + 1)
            ax.text(right, y, f"  {confidence:.3g}", va="center", fontsize=8)
        labels = [", ".join(map(str, e)) for e in rows["events"]]
        ax.set_yticks(np.arange(len(rows))[::-1], labels, fontsize=8)
        ax.set_xlabel("time (possible instants of each event)")
        ax.set_ylabel("matched events")
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours(i % 10))
                   for i in range(len(self.pattern_items))]
        if handles:
            ax.legend(handles, self.pattern_items, title="item", fontsize=8, loc="lower right")
        ax.set_title(self.summary() + (f" (top {len(rows)})" if len(rows) < len(self) else ""),
                     fontsize=10)
        if right:
            ax.set_xlim(right=right + max(1.0, 0.12 * right))
        return ax


class _Plot:
    """Callable for the timeline, pandas' plot accessor for everything else."""

    def __init__(self, result: QueryResult) -> None:
        self._result = result

    def __call__(self, top: int = _DRAWN, ax: Any = None) -> Any:
        return self._result.timeline(top=top, ax=ax)

    def __getattr__(self, name: str) -> Any:
        return getattr(pd.DataFrame(self._result).plot, name)
