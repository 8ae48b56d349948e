"""The join engine's evaluation order: a greedy cost model (TPStream section 5.4).

TPStream orders the symbols of a pattern so that partial matches stay few: it binds, one at
a time, the symbol whose constraints to the symbols already bound leave the fewest
partners per partial match. Here that greedy order is built from every possible first
symbol and the one with the fewest estimated partial matches over all steps is kept.
The estimate here needs only sizes, the window and how restrictive each constraint is:

* a relation that pins an endpoint of the new situation to a bound one (``meets``,
  ``starts``, ``equals``, ...) or makes it cover a bound endpoint (``overlaps``,
  ``contains``, ...) leaves at most one partner, because the situations of one symbol
  never overlap (SEMANTICS B1); so does ``followed_by`` (the immediate successor);
* ``during`` leaves those inside one situation, ``before``/``after`` half of a partition;
* the window ``max(te) - min(ts) <= w`` keeps a fraction ``min(1, 2w / span)`` of a
  partition whose situations span ``span`` time units;
* a conjunction leaves at most its most restrictive member; a symbol with no constraint
  to the bound ones joins as a cross product (within the window).

>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0, C AS y > 0 "
...                          "PATTERN A before B AND B meets C")
>>> evaluation_order(q, {"A": 100, "B": 500, "C": 50})
('C', 'B', 'A')
>>> evaluation_order(q, {"A": 10, "B": 500, "C": 50})
('C', 'B', 'A')
"""

from __future__ import annotations

from collections.abc import Mapping

from uncertain_cep.interval.patterns import FollowedBy, RelationConstraint, TemporalPattern
from uncertain_cep.interval.relations import AllenRelation, inverse

__all__ = ["evaluation_order", "expected_partners"]

_R = AllenRelation
# Share of a partition's situations one bound situation leaves in relation r to it
# ("new r bound"); the rest leave at most one partner (an equality, or covering an endpoint).
_SHARE = {_R.before: 0.5, _R.after: 0.5, _R.during: 0.1}


def expected_partners(pattern: TemporalPattern, new: str, bound: frozenset[str] | set[str],
                      per_partition: float, window_share: float = 1.0) -> float:
    """Expected partners in ``new``'s situations of one partial match over ``bound``.

    ``per_partition`` is ``new``'s situations per partition, ``window_share`` the share of
    a partition the window leaves (1 without a window).

    >>> from uncertain_cep.interval.language import parse_temporal_query
    >>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before; meets B")
    >>> expected_partners(q, "B", {"A"}, 40), expected_partners(q, "B", {"A"}, 40, 0.1)
    (21.0, 3.0)
    """
    reach = max(per_partition * window_share, 1.0)
    best = reach  # no constraint: every situation within the window
    for constraint in pattern.constraints:
        left, right = constraint.symbols
        if new not in (left, right) or (right if left == new else left) not in bound:
            continue
        if isinstance(constraint, FollowedBy):
            estimate = 1.0
        elif isinstance(constraint, RelationConstraint):
            relations = (constraint.relations if left == new
                         else {inverse(r) for r in constraint.relations})
            estimate = (sum(max(_SHARE.get(r, 0.0) * reach, 1.0) for r in relations)
                        + len(constraint.succession))   # each at most one partner
        else:
            estimate = 1.0 if constraint.op == "=" else max(0.5 * reach, 1.0)
        best = min(best, estimate, reach)
    return float(best)


def evaluation_order(pattern: TemporalPattern, sizes: Mapping[str, int], *,
                     partitions: int = 1, span: float | None = None) -> tuple[str, ...]:
    """The order in which the join engine binds ``pattern``'s symbols (TPStream 5.4).

    Parameters
    ----------
    pattern : TemporalPattern
        With its window in data units (:meth:`~TemporalPattern.resolve_units`).
    sizes : mapping of symbol name to int
        Situations per symbol, over all partitions.
    partitions : int
        Partitions holding situations (sizes are spread evenly over them).
    span : float, optional
        Mean time a partition's situations span; with the window it gives the share of a
        partition the window leaves.

    Returns
    -------
    tuple of str
        Every symbol once. From each possible first symbol, the greedy order binds next the
        symbol with the fewest :func:`expected_partners` (ties: the smaller, then DEFINE
        order); of these orders the one with the fewest estimated partial matches, summed
        over the steps, wins (ties: the smaller first symbol, then DEFINE order).
    """
    names = pattern.symbol_names
    window_share = 1.0
    if pattern.within is not None and span is not None and span > 0:
        window_share = min(1.0, 2.0 * pattern.within.value / span)
    partitions = max(partitions, 1)

    def greedy_from(first: str) -> tuple[float, tuple[str, ...]]:
        """The greedy order from ``first`` and its estimated partial matches, summed."""
        order, bound = [first], {first}
        partial = float(sizes[first])
        total = partial
        while len(order) < len(names):
            def cost(name: str) -> tuple[float, int, int]:
                partners = expected_partners(pattern, name, bound, sizes[name] / partitions,
                                             window_share)
                return partners, sizes[name], names.index(name)
            chosen = min((n for n in names if n not in bound), key=cost)
            partial *= cost(chosen)[0]
            total += partial
            order.append(chosen)
            bound.add(chosen)
        return total, tuple(order)

    # Every start is tried: the smallest symbol may have only loose constraints (a Star
    # pattern's leaf in a ``before`` relation), a larger one may pin its partners.
    return min((greedy_from(first) + (sizes[first], names.index(first)) for first in names),
               key=lambda t: (t[0], t[2], t[3]))[1]
