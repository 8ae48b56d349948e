"""EXPLAIN: what a strategy did for one query, step by step.

A query is evaluated (as SQL's ``EXPLAIN ANALYZE`` does), with estimates computed even by
strategies that do not need them, and its counters are laid out: per step the items
matched (and by how many partial tuples), estimated and actual candidates, entries created
and kept, range queries and seconds; in total the paper's xi (entries ever created), range
queries, R*-tree candidates, pruned tuples and seconds.

>>> stats = QueryStats("selectivity", entries_created=3, range_queries=2, candidates=3,
...     seconds=0.001, steps=[StepStats(1, {"B@2": 1}, 1.0, 1, 1, 1, 1, 0.0005),
...                           StepStats(2, {"A@1": 1}, 2.5, 2, 2, 1, 1, 0.0005)])
>>> ex = Explanation("PATTERN SEQ(A, B)", 1, stats)
>>> print(ex)  # doctest: +NORMALIZE_WHITESPACE
strategy selectivity: 1 answer rows, 3 entries created (xi), 2 range queries,
3 R*-tree candidates, 0 tuples pruned, 0.001 s
 step items  estimated  candidates  created  kept  range queries  ms
    1  B@2         1.0           1        1     1              1 0.5
    2  A@1         2.5           2        2     1              1 0.5
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from uncertain_cep.query.evaluation.stats import QueryStats, StepStats

__all__ = ["Explanation"]


@dataclass(frozen=True)
class Explanation:
    """The plan and counters of one evaluated query (see the module docstring), and its
    answer."""

    query: str
    rows: int
    stats: QueryStats
    answer: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    @property
    def strategy(self) -> str:
        return self.stats.strategy

    @property
    def steps(self) -> list[StepStats]:
        return self.stats.steps

    @property
    def order(self) -> list[str]:
        """The items in the order they were matched (per step, the most common choice)."""
        return [max(s.items, key=lambda k: s.items[k]) for s in self.steps if s.items]

    def steps_frame(self) -> pd.DataFrame:
        """One row per step."""
        rows = []
        for s in self.steps:
            rows.append({"step": s.step,
                         "items": ", ".join(f"{k}" if len(s.items) == 1 else f"{k} x{v}"
                                            for k, v in s.items.items()),
                         "estimated": s.estimated, "candidates": s.candidates,
                         "created": s.created, "kept": s.kept,
                         "range queries": s.range_queries,
                         "ms": round(1000 * s.seconds, 3), "access path": s.access})
        columns = ["step", "items", "estimated", "candidates", "created", "kept",
                   "range queries", "ms"]
        if any(s.access for s in self.steps):
            columns.append("access path")
        return pd.DataFrame(rows, columns=columns)

    def summary(self) -> str:
        t = self.stats
        parts = [f"strategy {self.strategy}: {self.rows} answer rows",
                 f"{t.entries_created} entries created (xi)",
                 f"{t.range_queries} range queries",
                 f"{t.candidates} R*-tree candidates",
                 f"{t.tuples_pruned} tuples pruned",
                 f"{t.seconds:.3g} s"]
        if t.slices is not None:
            parts.insert(1, f"{t.slices} time slices on {t.engine}")
        text = ", ".join(parts[:3]) + ",\n" + ", ".join(parts[3:])
        if t.weighted:
            text += ("\ninstants weighted (SEMANTICS A6): each OI weighs the product of its "
                     "events' instant weights")
        return text

    def shards(self) -> str:
        """The shards of a sharded index the evaluation read (each time slice opens those
        its span meets). Empty for an index in one directory.

        >>> s = QueryStats("selectivity", slices=2, shards_read=[2, 3], shards=4)
        >>> print(Explanation("q", 0, s).shards())
        Shards read: 2, 3 (2 of 4)
        """
        if self.stats.shards is None:
            return ""
        return f"Shards read: {self.stats.shards_text()}"

    def threshold(self) -> str:
        """How a top-k query's pruning threshold rose as better rows came in (empty if it
        never rose): the paper's confidence pruning with a threshold that is the k-th
        best confidence found so far; first, its pass over the rows of confidence 1
        alone (:mod:`~uncertain_cep.query.evaluation.certain_first`). On Spark each time
        slice's threshold rises on its own: their rises, by threshold.

        >>> s = QueryStats("selectivity", threshold_rises=[(120, 0.25), (900, 0.5)],
        ...                certain_pass=(3, 40, False))
        >>> print(Explanation("q", 2, s).threshold())
        First pass, rows of confidence 1 only: 3 found (40 entries), too few: searched again
        Pruning threshold rose (LIMIT): 0.25 after 120 entries, 0.5 after 900 entries
        """
        lines = []
        if self.stats.certain_pass is not None:
            found, entries, enough = self.stats.certain_pass
            lines.append(f"First pass, rows of confidence 1 only: {found:,} found "
                         f"({entries:,} entries), "
                         + ("enough" if enough else "too few: searched again"))
        rises = self.stats.threshold_rises
        if rises:
            shown = rises if len(rises) <= 6 else [*rises[:3], *rises[-3:]]
            steps = [f"{theta:.6g} after {entries:,} entries" for entries, theta in shown]
            if len(rises) > 6:
                steps.insert(3, f"... ({len(rises) - 6} more)")
            where = (f"LIMIT, each of {self.stats.slices} time slices"
                     if self.stats.slices is not None else "LIMIT")
            lines.append(f"Pruning threshold rose ({where}): " + ", ".join(steps))
        return "\n".join(lines)

    def __str__(self) -> str:
        text = self.summary()
        if threshold := self.threshold():
            text += "\n" + threshold
        if self.stats.shards is not None:
            text += "\n" + self.shards()
        if self.steps:
            text += "\n" + self.steps_frame().to_string(index=False)
        return text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's plain-text display: the readable summary, not the dataclass repr.
        printer.text(str(self))

    def _repr_html_(self) -> str:
        table = self.steps_frame().to_html(index=False) if self.steps else ""
        shards = (f"<p>{html.escape(self.shards())}</p>" if self.stats.shards is not None
                  else "")
        if threshold := self.threshold():
            shards = f"<p>{html.escape(threshold)}</p>" + shards
        return (f"<div><pre>{html.escape(self.query)}</pre>"
                f"<p>{html.escape(self.summary())}</p>{shards}{table}</div>")
