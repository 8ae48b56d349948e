"""Complete tuples to answer rows: each tuple's probability (its programme), with
negation its factor (the same in every world, bounded, or its negation programme), and
the rows that reach the threshold (SEMANTICS A4).

Nothing a complete tuple yields feeds the search again. So the batch engine hands this
work to a spare core (:mod:`~uncertain_cep.query.engine.background`), with kernels that run in
the calling thread (``threads=1``), and goes on with its steps. What is here reads the
index's tables only and returns what it found; the engine counts it when it collects it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from uncertain_cep.query.engine.kernels.negation import NegatedNodes
from uncertain_cep.query.engine.kernels.tuples import (
    TupleTable,
    negated_probabilities,
    tuple_probabilities,
)
from uncertain_cep.query.engine.negation_bounds import CertainWeighers
from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.context import TOLERANCE

__all__ = ["Completed", "Completion"]


@dataclass
class Completed:
    """What some complete tuples gave: answer rows, the states their programmes held
    (entries created), the rows kept and the tuples pruned."""

    answers: list[Answer] = field(default_factory=list)
    created: int = 0
    kept: int = 0
    pruned: int = 0

    def add(self, events: np.ndarray, conf: np.ndarray, first: np.ndarray,
            last: np.ndarray, theta: float) -> None:
        """Keep the tuples whose confidence ``conf`` reaches ``theta``."""
        if theta > TOLERANCE:
            self.pruned += int((conf < theta - TOLERANCE).sum())
        passing = (conf >= theta - TOLERANCE) & (conf > 0)
        self.answers.append(Answer(events[passing], np.minimum(conf[passing], 1.0),
                                   first[passing], last[passing]))
        self.kept += int(passing.sum())


@dataclass(frozen=True)
class Completion:
    """A query's means to complete tuples: the kernels' tables, its window and
    threshold, and with negation the NOT items' weighers (``certain``), gaps and
    nodes."""

    tuple_table: TupleTable
    window: float
    theta: float
    certain: CertainWeighers | None = None
    gaps: np.ndarray | None = None
    negated: NegatedNodes | None = None

    def floor(self, factor: np.ndarray) -> np.ndarray:
        """Per tuple, the mass below which its programme can stop: the threshold over
        the bound's other ``factor``s (none without a threshold)."""
        if self.theta <= TOLERANCE:
            return np.zeros(len(factor))
        with np.errstate(divide="ignore"):
            return np.where(factor > 0, (self.theta - TOLERANCE) / factor, np.inf)

    def answers(self, events: np.ndarray, total: np.ndarray, attribute: np.ndarray,
                factor: np.ndarray, first: np.ndarray, last: np.ndarray,
                earliest: np.ndarray, latest: np.ndarray, run: np.ndarray,
                exact: np.ndarray, threads: int | None = None) -> Completed:
        """The answer rows of complete tuples, given their parents' bounds (``total``;
        their probabilities where ``run`` is False), the product of their events'
        Pr(S | e) (``attribute``) and the bound's other factors (``factor``), their first
        and last instants where known, their columns' instants, which run their
        programme (``run``) and which know their probability without negation and its
        first and last instants once they have (``exact``). ``threads``: for the
        kernels (1: in this thread). The arrays are the caller's to give away: they are
        written to."""
        done = Completed()
        done.created += self.run_programmes(events, total, attribute, factor, first, last,
                                            earliest, latest, run, threads)
        live = total > 0
        if self.theta > TOLERANCE:
            passing = total * factor >= self.theta - TOLERANCE
            done.pruned += int((~passing).sum())
            live &= passing
        events, total, attribute = events[live], total[live], attribute[live]
        first, last = first[live], last[live]
        if self.certain is None:
            done.add(events, total * attribute, first, last, self.theta)
            return done
        self._negated(done, events, total, attribute, first, last, earliest[live],
                      latest[live], exact[live], threads)
        return done

    def run_programmes(self, events: np.ndarray, total: np.ndarray, attribute: np.ndarray,
                       factor: np.ndarray, first: np.ndarray, last: np.ndarray,
                       earliest: np.ndarray, latest: np.ndarray, run: np.ndarray,
                       threads: int | None = None) -> int:
        """The programmes of the tuples ``run`` says, written in place: their bounds
        (complete: probabilities) to ``total``, their first and last instants, their
        columns' narrowed instants, and with negation, for those kept, the bound's other
        factors (``attribute`` times the certain gaps' weights) to ``factor``. Returns
        the states the programmes held (entries created)."""
        if not run.any():
            return 0
        (total[run], first[run], last[run], states, earliest[run],
         latest[run]) = tuple_probabilities(self.tuple_table, events[run], self.window,
                                            self.floor(factor[run]), threads=threads)
        if self.certain is not None:
            # The programme narrowed the columns' instants: the gaps too (of the tuples
            # it kept, in place).
            kept = run & (total > 0)
            factor[kept] = attribute[kept] * self.certain.factors(
                events, earliest, latest, kept)[kept]
        return int(states.sum())

    def likeliest_outside(self, events: np.ndarray, earliest: np.ndarray,
                          latest: np.ndarray, total: np.ndarray, floor: np.ndarray,
                          threads: int | None = None,
                          chosen: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                          ) -> tuple[np.ndarray, int]:
        """Per tuple, an upper bound of its probability with negation (``total``: its
        probability without, or a bound of it): for one event ``x`` that may lie in a
        gap (:meth:`~uncertain_cep.query.engine.negation_bounds.CertainWeighers.likeliest`),
        ``total - Pr(C | x) P(tuple, x inside the gap)``, the second term by the cheap
        programme over the tuple with ``x`` as a column of its own between the gap's
        neighbours. Every world of the tuple with ``x`` in the gap and ``C(x)`` holds no
        match; the bound's factors are at most 1 (SEMANTICS A4, condition 4). Where the
        bound could not fall below ``floor`` the programme may stop early (the bound is
        then ``total``). ``chosen``: those events (``likeliest`` of these tuples), where
        the caller has them. Returns the bounds and the programmes' states."""
        assert self.certain is not None
        gap, row, pr = (self.certain.likeliest(events, earliest, latest) if chosen is None
                        else chosen)
        bound = total.copy()
        states = 0
        for c in np.unique(gap[gap >= 0]).tolist():
            some = np.flatnonzero(gap == c)
            widened = np.insert(events[some], c + 1, row[some], axis=1)
            inside, _, _, held, _, _ = tuple_probabilities(
                self.tuple_table, widened, self.window,
                np.maximum((total[some] - floor[some]) / pr[some], 0.0), threads=threads)
            bound[some] -= pr[some] * inside
            states += int(held.sum())
        return bound, states

    def _negated(self, done: Completed, events: np.ndarray, total: np.ndarray,
                 attribute: np.ndarray, first: np.ndarray, last: np.ndarray,
                 earliest: np.ndarray, latest: np.ndarray, exact: np.ndarray,
                 threads: int | None) -> None:
        """Answers among complete tuples of a pattern with negation, given their
        probabilities without it (``exact`` where that and their first and last instants
        are known: else a bound), their first and last instants and their columns'
        instants.

        Where every gap's events are inside it for sure or outside for sure, the factor
        is the same in every world (:meth:`~uncertain_cep.query.engine.negation_bounds.
        CertainWeighers.settled`); the others run their programmes again, keeping what
        the negation kernel reads (a tuple's classes multiply by its kept nodes, so the
        cheap programme goes first: measured 2x on localization n = 15)."""
        assert self.certain is not None and self.gaps is not None
        assert self.negated is not None
        factor, settled = self.certain.settled(events, earliest, latest)
        settled &= exact
        done.add(events[settled], total[settled] * attribute[settled] * factor[settled],
                 first[settled], last[settled], self.theta)
        rest = ~settled
        events, attribute = events[rest], attribute[rest]
        if self.theta > TOLERANCE and len(events):
            # (An event likely inside a gap prunes many before their programme, cheaply.)
            bound, held = self.likeliest_outside(
                events, earliest[rest], latest[rest], total[rest],
                self.floor(attribute * factor[rest]), threads)
            done.created += held
            keep = bound * attribute * factor[rest] >= self.theta - TOLERANCE
            done.pruned += int((~keep).sum())
            events, attribute = events[keep], attribute[keep]
        if len(events):
            total, first, last, states = negated_probabilities(
                self.tuple_table, events, self.window, self.gaps, self.negated,
                self.floor(attribute), threads=threads)
            done.created += int(states.sum())
            done.add(events, total * attribute, first, last, self.theta)
