"""EXPLAIN: what a strategy did for one query, step by step.

A query is evaluated (as SQL's ``EXPLAIN ANALYZE`` does), with estimates computed even by
strategies that do not need them, and its counters are laid out: per step the items
matched (and by how many partial tuples), estimated and actual candidates, entries created
and kept, range queries and seconds; in total the paper's xi (entries ever created), range
queries, R*-tree candidates, pruned tuples and seconds.

>>> ex = Explanation("PATTERN SEQ(A, B)", "selectivity", 1, {"entries_created": 3,
...     "range_queries": 2, "candidates": 3, "tuples_pruned": 0, "seconds": 0.001},
...     ({"step": 1, "items": {"B@2": 1}, "estimated": 1.0, "candidates": 1, "created": 1,
...       "kept": 1, "range_queries": 1, "seconds": 0.0005},
...      {"step": 2, "items": {"A@1": 1}, "estimated": 2.5, "candidates": 2, "created": 2,
...       "kept": 1, "range_queries": 1, "seconds": 0.0005}))
>>> print(ex)  # doctest: +NORMALIZE_WHITESPACE
strategy selectivity: 1 answer rows, 3 entries created (xi), 2 range queries,
3 R*-tree candidates, 0 tuples pruned, 0.001 s
 step items  estimated  candidates  created  kept  range queries  ms
    1  B@2         1.0           1        1     1              1 0.5
    2  A@1         2.5           2        2     1              1 0.5
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = ["Explanation"]


@dataclass(frozen=True)
class Explanation:
    """The plan and counters of one evaluated query (see the module docstring), and its
    answer."""

    query: str
    strategy: str
    rows: int
    totals: Mapping[str, Any]
    steps: Sequence[Mapping[str, Any]] = ()
    answer: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_result(cls, query: str, answer: pd.DataFrame) -> Explanation:
        """From an answer and the counters it carries in ``answer.attrs["stats"]``."""
        stats = answer.attrs.get("stats", {})
        totals = {k: v for k, v in stats.items() if k not in ("steps", "strategy")}
        return cls(query, str(stats.get("strategy", "?")), len(answer), totals,
                   tuple(stats.get("steps", ())), answer)

    @property
    def order(self) -> list[str]:
        """The items in the order they were matched (per step, the most common choice)."""
        return [max(s["items"], key=s["items"].get) for s in self.steps if s["items"]]

    def steps_frame(self) -> pd.DataFrame:
        """One row per step."""
        rows = []
        for s in self.steps:
            rows.append({"step": s["step"],
                         "items": ", ".join(f"{k}" if len(s["items"]) == 1 else f"{k} x{v}"
                                            for k, v in s["items"].items()),
                         "estimated": s.get("estimated"), "candidates": s["candidates"],
                         "created": s["created"], "kept": s["kept"],
                         "range queries": s["range_queries"],
                         "ms": round(1000 * s["seconds"], 3)})
        return pd.DataFrame(rows, columns=["step", "items", "estimated", "candidates",
                                           "created", "kept", "range queries", "ms"])

    def summary(self) -> str:
        t = self.totals
        parts = [f"strategy {self.strategy}: {self.rows} answer rows",
                 f"{t.get('entries_created', 0)} entries created (xi)",
                 f"{t.get('range_queries', 0)} range queries",
                 f"{t.get('candidates', 0)} R*-tree candidates",
                 f"{t.get('tuples_pruned', 0)} tuples pruned",
                 f"{float(t.get('seconds', 0.0)):.3g} s"]
        if "slices" in t:
            parts.insert(1, f"{t['slices']} time slices on {t.get('engine', 'spark')}")
        return ", ".join(parts[:3]) + ",\n" + ", ".join(parts[3:])

    def __str__(self) -> str:
        if not self.steps:
            return self.summary()
        return self.summary() + "\n" + self.steps_frame().to_string(index=False)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's plain-text display: the readable summary, not the dataclass repr.
        printer.text(str(self))

    def _repr_html_(self) -> str:
        table = self.steps_frame().to_html(index=False) if self.steps else ""
        return (f"<div><pre>{html.escape(self.query)}</pre>"
                f"<p>{html.escape(self.summary())}</p>{table}</div>")
