"""The possible-worlds baseline: answers straight from the definition (SEMANTICS A2-A4).

Nothing here uses the OI-tree index. Each group's order instances are enumerated by brute
force over every assignment of instants (Condition 1, and Condition 2 on every pair);
groups are independent, and each group's OIs equally likely, or, where events weigh
their instants (SEMANTICS A6), each OI as likely as the product of its events' weights
at their instants (OIs of weight zero are no world); so the probability of a world
restricted to some groups is the product of per-group (weighted) fractions. For every tuple
of events and every strictly increasing assignment of instants within the window, the
contribution is, per group, the fraction of its OIs that agree with the assignment,
weighted by ``1 - Pr(C | x)`` for every other event ``x`` standing in a negation's gap.

It is exponential in group size; :data:`MAX_ASSIGNMENTS` bounds the enumeration.

>>> import pandas as pd
>>> from uncertain_cep.model.events import read_archive
>>> from uncertain_cep.query.language.parse import parse_query
>>> df = pd.DataFrame({"event_id": ["a", "b"], "group": [0, 0], "t_lo": [1, 1],
...                    "t_hi": [2, 2], "x": [1.0, 2.0]})
>>> matches = possible_worlds_answer(read_archive(df), parse_query(
...     "PATTERN SEQ(A, B) DEFINE A AS x < 1.5, B AS x > 1.5"))
>>> [(m.events, m.confidence) for m in matches]
[((0, 1), 0.5)]

As a strategy (``strategy="possible_worlds"``), :func:`possible_worlds` takes the query
context like the index strategies and reads only its archive, pattern and Condition 2.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import numpy as np

from uncertain_cep.errors import InputError, PlanningError
from uncertain_cep.model.events import Archive
from uncertain_cep.model.feasibility import GroupPairCheck, PairConstraint
from uncertain_cep.query.evaluation.answer import Answer, Match
from uncertain_cep.query.evaluation.context import TOLERANCE, QueryContext
from uncertain_cep.query.language.patterns import SequencePattern
from uncertain_cep.query.language.symbols import check_symbols, symbol_probability

__all__ = ["MAX_ASSIGNMENTS", "enumerate_order_instances", "group_worlds", "possible_worlds",
           "possible_worlds_answer"]

MAX_ASSIGNMENTS = 2_000_000


def enumerate_order_instances(t_lo: Sequence[int], t_hi: Sequence[int],
                              pair_check: GroupPairCheck | None = None) -> np.ndarray:
    """Every order instance of one group as rows of instants (one column per event)."""
    sizes = [int(b) - int(a) + 1 for a, b in zip(t_lo, t_hi)]
    total = math.prod(sizes)
    if total > MAX_ASSIGNMENTS:
        raise PlanningError(f"the possible-worlds baseline would enumerate {total} assignments "
                            f"for one group (limit {MAX_ASSIGNMENTS}); use an index strategy")
    n = len(sizes)
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    # Offsets from t_lo, not np.arange(a, b + 1): b + 1 may be 2**63, past int64.
    grids = np.meshgrid(*[np.int64(a) + np.arange(size, dtype=np.int64)
                          for a, size in zip(t_lo, sizes)], indexing="ij")
    worlds = np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)
    ordered = np.sort(worlds, axis=1)
    worlds = worlds[np.all(np.diff(ordered, axis=1) > 0, axis=1)]
    if pair_check is not None:
        for i, j in itertools.permutations(range(n), 2):
            ti, tj = worlds[:, i], worlds[:, j]
            before = ti < tj
            ok = np.ones(len(worlds), dtype=bool)
            for a, b in set(zip(ti[before].tolist(), tj[before].tolist())):
                if not pair_check.allows(i, j, a, b):
                    ok &= ~(before & (ti == a) & (tj == b))
            worlds = worlds[ok]
    return worlds


def possible_worlds(ctx: QueryContext) -> Answer:
    """The baseline as a strategy: :func:`possible_worlds_answer` on the context's archive,
    pattern and Condition 2 (the index itself is not used)."""
    started = time.perf_counter()
    matches = possible_worlds_answer(ctx.index.archive, ctx.pattern,
                                     ctx.index.settings.condition2)
    ctx.stats.seconds = time.perf_counter() - started
    return Answer.from_matches(matches, len(ctx.positive))


def possible_worlds_answer(archive: Archive, pattern: SequencePattern,
                           condition2: PairConstraint | None = None) -> list[Match]:
    """Every tuple whose confidence reaches the threshold, computed from the definition."""
    check_symbols(archive, pattern)
    pattern = pattern.in_instants(archive.time_axis)
    members = archive.group_members()
    worlds, weights = [], []
    for m in members:
        w, omega = group_worlds(archive, m, condition2)
        worlds.append(w)
        weights.append(omega)
    pos = np.zeros(archive.n_events, dtype=np.int64)
    for m in members:
        pos[m] = np.arange(len(m))
    return _Enumerator(archive, pattern, worlds, weights, pos).run()


def group_worlds(archive: Archive, members: np.ndarray,
                 condition2: PairConstraint | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One group's worlds (its OIs of positive probability, one column per event of
    ``members``) and their weights: ones, or where events weigh their instants
    (SEMANTICS A6) the product of the events' weights at their instants."""
    label = archive.group_labels[archive.group_of[members[0]]] if len(members) else None
    check = condition2.for_group(archive, members) if condition2 is not None else None
    worlds = enumerate_order_instances(archive.t_lo[members], archive.t_hi[members], check)
    if len(worlds) == 0:
        raise InputError(f"group {label!r} has no order instance")
    omega = np.ones(len(worlds))
    if archive.instant_weights is not None:
        for col, e in enumerate(members):
            omega *= archive.instant_weights.at(int(e), int(archive.t_lo[e]), worlds[:, col])
        keep = omega > 0
        if not keep.any():
            raise InputError(f"group {label!r}: every order instance of its events weighs "
                             "zero (their instant weights leave no instants that fit "
                             "together; SEMANTICS A6)")
        worlds, omega = worlds[keep], omega[keep]
    return worlds, omega


class _Enumerator:
    def __init__(self, archive: Archive, pattern: SequencePattern, worlds: list[np.ndarray],
                 omegas: list[np.ndarray], pos: np.ndarray) -> None:
        self.archive = archive
        self.group = archive.group_of
        self.worlds = worlds
        self.omegas = omegas
        self.pos = pos
        self.window = pattern.window
        self.theta = pattern.confidence if pattern.confidence is not None else 0.0
        symbols = [pattern.items[i].symbol for i in pattern.positive_items]
        self.pr = [symbol_probability(archive, pattern.symbol(s)) for s in symbols]
        self.negations = [(k, symbol_probability(archive, pattern.symbol(s)))
                          for k, _, s in pattern.negations]
        self.total: dict[tuple[int, ...], list[float]] = {}

    def run(self) -> list[Match]:
        self._extend((), (), {})
        out = []
        for events, (p, t0, t1) in self.total.items():
            conf = p * math.prod(float(pr[r]) for pr, r in zip(self.pr, events))
            if conf > 0 and conf >= self.theta - TOLERANCE:
                out.append(Match(events, min(conf, 1.0), int(t0), int(t1)))
        return out

    def _extend(self, rows: tuple[int, ...], instants: tuple[int, ...],
                masks: dict[int, np.ndarray]) -> None:
        k = len(rows)
        if k == len(self.pr):
            self._record(rows, instants, masks)
            return
        for row in np.flatnonzero(self.pr[k] > 0):
            r = int(row)
            if r in rows:
                continue
            g = int(self.group[r])
            col = self.worlds[g][:, self.pos[r]]
            for t in range(int(self.archive.t_lo[r]), int(self.archive.t_hi[r]) + 1):
                if k and (t <= instants[-1] or t - instants[0] > self.window):
                    continue
                mask = col == t
                if g in masks:
                    mask = mask & masks[g]
                if not mask.any():
                    continue
                self._extend(rows + (r,), instants + (t,), {**masks, g: mask})

    def _record(self, rows: tuple[int, ...], instants: tuple[int, ...],
                masks: dict[int, np.ndarray]) -> None:
        weights: dict[int, np.ndarray] = {}
        for k, q in self.negations:
            a, b = instants[k] + 1, instants[k + 1] - 1
            for x in np.flatnonzero(q > 0):
                if int(x) in rows:
                    continue
                g = int(self.group[x])
                col = self.worlds[g][:, self.pos[x]]
                inside = (col >= a) & (col <= b)
                if inside.any():
                    w = weights.get(g, np.ones(len(col)))
                    weights[g] = w * np.where(inside, 1.0 - q[x], 1.0)
        p = 1.0
        for g in set(masks) | set(weights):
            omega = self.omegas[g]
            mask = masks.get(g, np.ones(len(omega), dtype=bool))
            w = weights.get(g, np.ones(len(omega))) * omega
            p *= float(np.sum(w[mask])) / float(np.sum(omega))
        if p <= 0:
            return
        acc = self.total.get(rows)
        if acc is None:
            self.total[rows] = [p, instants[0], instants[-1]]
        else:
            acc[0] += p
            acc[1] = min(acc[1], instants[0])
            acc[2] = max(acc[2], instants[-1])

