"""A query's answer as a DataFrame that knows its query: notebook display and a timeline.

:meth:`UncertainIndex.query <uncertain_cep.api.UncertainIndex.query>` returns a
:class:`QueryResult`: the answer table of SEMANTICS A4 (``events``, ``confidence``,
``t_first``, ``t_last``; one row per tuple) plus what the display needs -- the query text,
the pattern's positive items (the symbols the tuple's events matched, in order), each
matched event's possible instants ``[t_lo, t_hi]`` and the archive's time axis (for an
archive whose times were datetimes, ``t_first``/``t_last`` are datetimes in its time zone
and the timeline is drawn on dates). Everything a DataFrame does works as
usual, and frames derived from it (``res.head()``, ``res[res.confidence > .5]``,
``res.sort_values(...)``) are answers too, with the same context (``stats`` describes the
whole query); one that lost the answer's columns (``res[["confidence"]]``) displays and
plots as a DataFrame.

* In Jupyter it shows as a compact HTML block: the number of matches, the confidence
  range, the query, and the top rows (``_repr_html_``).
* :meth:`QueryResult.plot` draws the timeline: per matched tuple (top rows first) each
  event as its possible-time interval, coloured by pattern item, with the confidence.
  Pandas' own plotting stays reachable: ``res.plot(kind="hist", y="confidence")``,
  ``res.plot(x="t_first", y="confidence")``, ``res.plot.bar(...)`` and the like.

>>> import pandas as pd
>>> res = QueryResult.of(pd.DataFrame({"events": [(1, 2)], "confidence": [0.75],
...                                     "t_first": [0], "t_last": [3]}),
...                      query="PATTERN SEQ(A, B) ...", items=("A", "B"),
...                      event_times={1: (0, 1), 2: (2, 3)})
>>> res.summary()
'1 match, confidence 0.75'
>>> type(res.head()).__name__, res.head().summary()
('QueryResult', '1 match, confidence 0.75')
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.optional import require_matplotlib
from uncertain_cep.query.evaluation.stats import QueryStats

__all__ = ["QueryResult"]

# Rows shown in the notebook display and drawn by default in the timeline.
_SHOWN = 10
_DRAWN = 20


class QueryResult(pd.DataFrame):
    """The answer of an uncertain sequence query (SEMANTICS A4) with its context.

    Build one with :meth:`of`; the index's ``query`` does. Attributes beyond the
    DataFrame's (named so as not to hide ``DataFrame.query`` and ``DataFrame.items``):
    ``query_text``, ``pattern_items`` (the positive items' symbols in pattern order),
    ``event_times`` (event id -> ``(t_lo, t_hi)`` in instants, for the matched events),
    ``event_weights`` (event id -> its instant weights from ``t_lo`` on, SEMANTICS A6, for
    the matched events that have them),
    ``stats`` (what the evaluation did, a :class:`~uncertain_cep.query.evaluation.stats.QueryStats`)
    and ``time_axis`` (the archive's :class:`~uncertain_cep.model.time_axis.TimeAxis`, or
    None for integer instants).
    """

    _metadata: ClassVar[list[str]] = ["query_text", "pattern_items", "event_times", "stats",
                                      "id_dtype", "time_axis", "event_weights"]
    query_text: str
    pattern_items: tuple[str, ...]
    event_times: dict[Any, tuple[int, int]]
    event_weights: dict[Any, tuple[float, ...]]
    stats: QueryStats
    id_dtype: np.dtype[Any] | None   # the archive's event-id type (for empty answers)
    time_axis: TimeAxis | None

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        # Derived frames (res.head(), res[mask], res.sort_values(...)) stay answers, with
        # the context pandas carries over (_metadata, through __finalize__); one that lost
        # the answer's columns shows and plots as the DataFrame it is (_is_answer).
        return QueryResult

    def _is_answer(self) -> bool:
        """Whether this frame still holds an answer's rows: its ``events`` and
        ``confidence`` columns, and the context of the query they answer."""
        return ({"events", "confidence"} <= set(self.columns)
                and getattr(self, "query_text", None) is not None)

    @classmethod
    def of(cls, frame: pd.DataFrame, *, query: str, items: Sequence[str],
           event_times: Mapping[Any, tuple[int, int]],
           stats: QueryStats | None = None,
           id_dtype: np.dtype[Any] | None = None,
           time_axis: TimeAxis | None = None,
           event_weights: Mapping[Any, Sequence[float]] | None = None) -> QueryResult:
        """Wrap an answer table (its columns and ``attrs`` are kept as they are)."""
        out = cls(frame)
        out.attrs = dict(frame.attrs)
        out.query_text = query
        out.pattern_items = tuple(items)
        out.event_times = dict(event_times)
        out.event_weights = {k: tuple(v) for k, v in (event_weights or {}).items()}
        out.stats = stats if stats is not None else QueryStats()
        out.id_dtype = id_dtype
        out.time_axis = time_axis
        return out

    def to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the answer to ``.parquet`` or ``.csv`` atomically: Parquet keeps
        ``events`` as a list column of the archive's id type, and both formats have one
        column per positive item (:mod:`uncertain_cep.answer_files`;
        :func:`~uncertain_cep.answer_files.read_answer` reads it back)."""
        from uncertain_cep.answer_files import write_answer

        write_answer(self, path, items=self.pattern_items, query=self.query_text,
                     id_dtype=self.id_dtype)

    # ------------------------------------------------------------ display
    def summary(self) -> str:
        """One line: how many matches and their confidence range."""
        n = len(self)
        if not self._is_answer():
            return f"{n} row{'s' if n != 1 else ''}"
        if n == 0:
            return "no match"
        low, high = float(self["confidence"].min()), float(self["confidence"].max())
        spread = f"{low:.4g}" if low == high else f"{low:.4g} to {high:.4g}"
        return f"{n} match{'es' if n != 1 else ''}, confidence {spread}"

    def _repr_html_(self) -> str | None:
        if not self._is_answer():
            return pd.DataFrame(self)._repr_html_()  # type: ignore[operator]
        stats = getattr(self, "stats", None)
        name = stats.strategy if stats is not None else ""
        strategy = f" ({html.escape(name)})" if name else ""
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
        if not self._is_answer():
            return pd.DataFrame(self).plot  # type: ignore[return-value]
        return _Plot(self)

    def timeline(self, top: int = _DRAWN, ax: Any = None, align: str = "auto") -> Any:
        """Draw the ``top`` most confident tuples as a timeline and return the Axes.

        Each tuple is one row (most confident at the top); each of its events is a bar
        over its possible instants ``[t_lo, t_hi + 1)`` (Zhou et al. 3.1: the event
        happened at one of them), coloured by the pattern item it matched; the
        confidences stand in a column on the right. An event whose instants carry
        weights (SEMANTICS A6) is drawn as its outline filled by one bar per instant, as
        tall as the instant's weight over the event's largest.

        ``align="absolute"`` draws every row on the archive's time axis (dates, in the
        input's time zone, when its times were datetimes); ``"tuple"`` shifts each row to
        start at its first possible instant (written beside the row's events), so short
        tuples far apart stay readable; ``"auto"`` picks ``"tuple"`` when the rows span
        over 10 times their longest tuple.
        """
        require_matplotlib("res.plot()")
        import matplotlib.pyplot as plt

        if align not in ("auto", "absolute", "tuple"):
            raise InputError(f"align must be 'auto', 'absolute' or 'tuple', got {align!r}")
        rows = pd.DataFrame(self.head(max(int(top), 0)))
        spans = [self._spans(position, events) for position, events in
                 enumerate(rows["events"])]
        if align == "auto":
            longest = max((s[-1][1] - s[0][0] for s in spans if s), default=0)
            everything = (max((hi for s in spans for _, hi in s), default=0)
                          - min((lo for s in spans for lo, _ in s), default=0))
            align = "tuple" if longest and everything > 10 * longest else "absolute"
        if ax is None:
            # Constrained layout: the tuple labels and the legend stay inside a saved
            # figure (fig.savefig clipped them).
            _, ax = plt.subplots(figsize=(9, 0.45 * max(len(rows), 1) + 1.4),
                                 layout="constrained")
        dates = _Dates(self.time_axis)
        colours = plt.get_cmap("tab10")
        labels = []
        right = 0
        for position, (events, span) in enumerate(zip(rows["events"], spans)):
            y = len(rows) - 1 - position
            shift = min(lo for lo, _ in span) if align == "tuple" and span else 0
            for item, (lo, hi) in enumerate(span):
                # Relative positions stay in instants; absolute ones become dates.
                left, end = ((lo - shift, hi - shift) if align == "tuple"
                             else dates.place(lo, hi))
                weights = self._weights(events[item])
                if weights is None:
                    ax.barh(y, end - left, left=left, height=0.6,
                            color=colours(item % 10), edgecolor="black", linewidth=0.5)
                else:
                    ax.barh(y, end - left, left=left, height=0.6, fill=False,
                            edgecolor="black", linewidth=0.5)
                    for k, w in enumerate(weights):
                        a, b = ((lo + k - shift, lo + k + 1 - shift) if align == "tuple"
                                else dates.place(lo + k, lo + k + 1))
                        ax.bar(a, 0.6 * w, width=b - a, bottom=y - 0.3, align="edge",
                               color=colours(item % 10), linewidth=0)
                right = max(right, hi - shift)
            name = ", ".join(map(str, events))
            labels.append(f"{name} @ {dates.label(shift)}" if align == "tuple" else name)
        for position, confidence in enumerate(rows["confidence"]):
            ax.annotate(f"{confidence:.3g}", (1.01, len(rows) - 1 - position),
                        xycoords=("axes fraction", "data"), va="center", fontsize=8)
        ax.set_yticks(np.arange(len(rows))[::-1], labels, fontsize=8)
        ax.set_xlabel(dates.xlabel(align))
        if align != "tuple":
            dates.format(ax)
        ax.set_ylabel("matched events" + (" @ first instant" if align == "tuple" else ""))
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours(i % 10))
                   for i in range(len(self.pattern_items))]
        if handles and len(rows):
            ax.legend(handles, self.pattern_items, title="item", fontsize=8,
                      loc="upper left", bbox_to_anchor=(1.07, 1.0))
        ax.set_title(self.summary() + (f" (top {len(rows)})" if len(rows) < len(self) else "")
                     + ("; confidence on the right" if len(rows) else ""), fontsize=10)
        if align == "tuple" and right:
            ax.set_xlim(0, right * 1.05)
        return ax

    def _weights(self, event: Any) -> np.ndarray | None:
        """``event``'s instant weights over its largest (None: equally likely)."""
        weights = getattr(self, "event_weights", None) or {}
        if event not in weights:
            return None
        w = np.asarray(weights[event], dtype=np.float64)
        return w / w.max()

    def _spans(self, position: int, events: tuple[Any, ...]) -> list[tuple[int, int]]:
        """Each event's possible instants as a half-open ``[t_lo, t_hi + 1)``."""
        out = []
        for event in events:
            if event not in self.event_times:
                raise InputError(f"event {event!r} of row {position} has no possible "
                                 "times in this result; plot the index's own answer")
            lo, hi = self.event_times[event]
            out.append((lo, hi + 1))
        return out


class _Dates:
    """Where the timeline puts instants: on the instants' own axis, or for an archive
    whose times were datetimes on matplotlib's dates, labelled in the input's zone."""

    def __init__(self, axis: TimeAxis | None) -> None:
        self.axis = axis if axis is not None and axis.is_datetime else None

    def place(self, lo: int, hi: int) -> tuple[float, float]:
        """The x positions of instants ``lo`` and ``hi``."""
        if self.axis is None:
            return float(lo), float(hi)
        from matplotlib import dates

        unit = self.axis.unit_ns
        assert unit is not None
        # Matplotlib counts days since its epoch, in UTC; format() shows the input's zone.
        start, end = dates.date2num(np.array([lo * unit, hi * unit], dtype="datetime64[ns]"))
        return float(start), float(end)

    def label(self, instant: int) -> str:
        if self.axis is None:
            return str(instant)
        return str(self.axis.datetimes(np.array([instant]))[0])

    def xlabel(self, align: str) -> str:
        if align == "tuple":
            unit = "" if self.axis is None else f" (of {self.axis.unit_text})"
            return f"instants{unit} since the tuple's first possible instant"
        if self.axis is None:
            return "time (possible instants of each event)"
        zone = self.axis.timezone or "naive, read as UTC"
        return f"time, {zone} (possible instants of each event)"

    def format(self, ax: Any) -> None:
        if self.axis is not None:
            ax.xaxis_date(tz=self.axis.datetimes(np.zeros(0, np.int64)).dt.tz)


class _Plot:
    """``res.plot()`` (or ``kind="timeline"``) draws the timeline; with any other
    ``kind`` or pandas' arguments (``x=``, ``y=``...) it is pandas' ``DataFrame.plot``;
    ``res.plot.<kind>(...)`` is pandas' accessor."""

    _TIMELINE_ARGUMENTS: ClassVar[frozenset[str]] = frozenset({"top", "ax", "align"})

    def __init__(self, result: QueryResult) -> None:
        self._result = result

    def __call__(self, *args: Any, kind: str | None = None, **kwargs: Any) -> Any:
        if kind == "timeline" or (kind is None and not args
                                  and set(kwargs) <= self._TIMELINE_ARGUMENTS):
            return self._result.timeline(*args, **kwargs)
        return pd.DataFrame(self._result).plot(  # type: ignore[call-overload]
            *args, kind=kind or "line", **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(pd.DataFrame(self._result).plot, name)
