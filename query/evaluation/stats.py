"""What an evaluation did, as typed counters: totals and one record per step.

Every strategy fills a :class:`QueryStats` (Zhou et al. 6.3 measure the paper's xi, the
entries ever created, and the range queries issued); EXPLAIN
(:class:`~uncertain_cep.query.evaluation.explain.Explanation`) lays it out, and each answer carries
it (``res.stats``). Time-sliced evaluation merges the counters of its slices.

>>> s = QueryStats(strategy="sequential")
>>> s.entries_created += 3
>>> s.steps.append(StepStats(step=1, items={"A@1": 1}, estimated=None, candidates=3,
...                          created=3, kept=3, range_queries=1, seconds=0.001))
>>> total = QueryStats.merged([s, s], engine="spark")
>>> total.entries_created, total.slices, total.steps
(6, 2, [])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["QueryStats", "StepStats"]


@dataclass
class StepStats:
    """One step of a strategy: the items it matched (item label -> how many partial
    tuples matched it there), estimated and actual candidates (distinct pairs of a partial
    tuple and an event matching its item in its window), entries created and kept after
    pruning, range queries issued, seconds, and the access path that found them."""

    step: int
    items: dict[str, int]
    estimated: float | None
    candidates: int
    created: int
    kept: int
    range_queries: int
    seconds: float
    access: str = ""   # how the step found its candidates


@dataclass
class QueryStats:
    """Counters of one evaluation. ``entries_created`` is the paper's xi; ``candidates``
    the events R*-tree searches returned; ``slices`` the time slices of a Spark
    evaluation (None in this process); ``shards_read`` the shards of a sharded index
    the evaluation opened, of its ``shards``."""

    strategy: str = ""
    entries_created: int = 0
    range_queries: int = 0
    candidates: int = 0
    tuples_pruned: int = 0
    steps: list[StepStats] = field(default_factory=list)
    seconds: float = 0.0
    engine: str = "local"
    slices: int | None = None
    shards_read: list[int] = field(default_factory=list)
    shards: int | None = None
    # Seconds spent compiling kernels during the query (their first use on a machine),
    # not counted in ``seconds``.
    compile_seconds: float = 0.0
    # A top-k query's pruning threshold as it rose: (entries created by then, the new
    # threshold), in order.
    threshold_rises: list[tuple[int, float]] = field(default_factory=list)
    # A top-k query's first pass over the rows of confidence 1 alone
    # (query/evaluation/certain_first.py): (rows found, entries it created, whether they
    # were enough); None where it did not run. Summed over a Spark query's slices (enough
    # if every slice's was).
    certain_pass: tuple[int, int, bool] | None = None
    # Whether the index weighs its events' instants (SEMANTICS A6): its OIs' probabilities
    # are products of instant weights, not equal shares.
    weighted: bool = False

    @classmethod
    def merged(cls, parts: Iterable[QueryStats], engine: str, seconds: float | None = None
               ) -> QueryStats:
        """The counters of several slices of one query, summed. Steps are left out: each
        slice plans on its own (the selectivity order may differ between slices), so
        per-step records do not add up. ``seconds`` defaults to the sum."""
        parts = list(parts)
        out = cls(strategy=parts[0].strategy if parts else "", engine=engine,
                  slices=len(parts))
        for p in parts:
            out.entries_created += p.entries_created
            out.range_queries += p.range_queries
            out.candidates += p.candidates
            out.tuples_pruned += p.tuples_pruned
            out.seconds += p.seconds
            out.compile_seconds += p.compile_seconds
            out.shards = p.shards if p.shards is not None else out.shards
            out.weighted = out.weighted or p.weighted
            if p.certain_pass is not None:
                found, entries, enough = out.certain_pass or (0, 0, True)
                out.certain_pass = (found + p.certain_pass[0], entries + p.certain_pass[1],
                                    enough and p.certain_pass[2])
        # Each slice's threshold rose on its own: its rises, by threshold, with the
        # slice's own entry counts.
        out.threshold_rises = sorted((r for p in parts for r in p.threshold_rises),
                                     key=lambda r: (r[1], r[0]))
        out.shards_read = sorted({k for p in parts for k in p.shards_read})
        if seconds is not None:
            out.seconds = seconds
        return out

    def _lines(self) -> list[tuple[str, str]]:
        where = (f"{self.engine}, {self.slices} time slices" if self.slices is not None
                 else self.engine)
        rows = [("strategy", f"{self.strategy or '-'} ({where})"),
                ("time", f"{self.seconds:.3f} s"),
                ("entries created (xi)", f"{self.entries_created:,}"),
                ("range queries", f"{self.range_queries:,}"),
                ("candidate events", f"{self.candidates:,}"),
                ("tuples pruned", f"{self.tuples_pruned:,}")]
        if self.steps:
            rows.append(("steps", f"{len(self.steps)} (idx.explain(query) shows them)"))
        if self.shards is not None:
            rows.append(("shards read", self.shards_text()))
        if self.certain_pass is not None:
            found, entries, enough = self.certain_pass
            rows.append(("first pass (LIMIT)", f"{found:,} rows of confidence 1 "
                         f"({entries:,} entries): "
                         + ("enough" if enough else "too few, searched again")))
        if self.threshold_rises:
            each = "" if self.slices is None else f", each of {self.slices} slices its own"
            rows.append(("threshold rose (LIMIT)", f"{len(self.threshold_rises):,} times, "
                         f"to {max(r[1] for r in self.threshold_rises):.6g}{each}"))
        if self.compile_seconds:
            # In this process the time above leaves them out; a Spark query's wall time
            # holds its workers' (summed here over its slices).
            rows.append(("kernels compiled", f"{self.compile_seconds:.1f} s (their first "
                         "use on this machine" + ("" if self.slices is not None else
                                                  "; not in the time above") + ")"))
        return rows

    def shards_text(self) -> str:
        """The shards read, by number, and how many the index has.

        >>> QueryStats(shards_read=[0, 1, 3], shards=8).shards_text()
        '0, 1, 3 (3 of 8)'
        """
        return (f"{', '.join(map(str, self.shards_read)) or 'none'} "
                f"({len(self.shards_read)} of {self.shards})")

    def __repr__(self) -> str:
        """A few aligned lines instead of the dataclass's one long line.

        >>> print(QueryStats(strategy="selectivity", entries_created=1200, seconds=0.25))
        QueryStats
          strategy              selectivity (local)
          time                  0.250 s
          entries created (xi)  1,200
          range queries         0
          candidate events      0
          tuples pruned         0
        """
        rows = self._lines()
        width = max(len(name) for name, _ in rows)
        return "\n".join(["QueryStats", *(f"  {name:<{width}}  {value}"
                                            for name, value in rows)])

    def _repr_html_(self) -> str:
        import html

        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
                        f"<td style='text-align:right'>{html.escape(value)}</td></tr>"
                        for name, value in self._lines())
        return f"<table class='uncertain-cep-stats'>{cells}</table>"
