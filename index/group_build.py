"""Indexing one dependency group: the build settings and :func:`build_group_forest`.

Groups are indexed independently: :func:`build_group_forest` is a pure function of the
group's rows and the :class:`BuildSettings` (the in-process
:class:`~uncertain_cep.index.event_index.EventIndex` calls it per group, the Spark pipeline
per group in executors). It plans the group's OI-tree(s) and instantiates them (Zhou et
al. 4.1), and turns a group without an order instance, or too large to index, into an
error that names the group and says what to do.

>>> forest = build_group_forest("g", ["a", "b"], [1, 1], [2, 2], None, BuildSettings())
>>> forest.n_trees, forest.n_nodes
(1, 5)
>>> build_group_forest("g", ["a", "b"], [1, 1], [1, 1], None, BuildSettings())
Traceback (most recent call last):
...
uncertain_cep.errors.InputError: group 'g' has no order instance: events 'a', 'b' all lie ...
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from uncertain_cep.errors import IndexBuildError, InputError
from uncertain_cep.index.forests.cluster_forest import forest_of_clusters
from uncertain_cep.index.forests.codes import code_scheme
from uncertain_cep.index.forests.domains import interval
from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.isolation import hall_violation
from uncertain_cep.index.forests.node_count import NodeBudgetExceeded
from uncertain_cep.index.forests.oi_tree import plan_group
from uncertain_cep.index.forests.piece_forests import PieceForest, split_group_forest
from uncertain_cep.index.forests.weights import GroupWeights
from uncertain_cep.model.feasibility import GroupPairCheck, PairConstraint
from uncertain_cep.model.values import plain

__all__ = ["BuildSettings", "build_group_forest", "piece_forests"]


@dataclass(frozen=True)
class BuildSettings:
    """How the index is built; validated when constructed.

    Parameters
    ----------
    condition2
        Condition 2 (``MaxSpeed`` or ``PairPredicate``), or ``None``.
    multi_tree
        Multi-tree index (default) or the paper's single tree (a baseline).
    codes
        ``"compact"`` (default) or ``"paper"``.
    node_budget
        Largest number of OI-tree nodes for one group.
    """

    condition2: PairConstraint | None = None
    multi_tree: bool = True
    codes: str = "compact"
    node_budget: int | None = 2_000_000

    def __post_init__(self) -> None:
        code_scheme(self.codes)  # validates the name
        if self.node_budget is not None and self.node_budget < 1:
            raise IndexBuildError(f"node_budget must be a positive int, got {self.node_budget}")


def build_group_forest(label: object, event_ids: Sequence[object], t_lo: Sequence[int],
                       t_hi: Sequence[int], pair_check: GroupPairCheck | None,
                       settings: BuildSettings,
                       weights: GroupWeights | None = None) -> GroupForest:
    """Index one dependency group: plan its OI-tree(s) and instantiate them (Zhou et al. 4.1).

    The node budget is checked first, from an exact count of the nodes that makes none
    (:func:`~uncertain_cep.index.forests.node_count.count_nodes`), so an oversized group fails
    before anything is allocated. Without Condition 2, a group of several clusters of
    overlapping events is assembled from them, its lone events at array speed
    (:func:`~uncertain_cep.index.forests.cluster_forest.forest_of_clusters`, the same forest).
    With instant ``weights`` (SEMANTICS A6) the counts are weighted sums and instants of
    weight zero have no node (:mod:`uncertain_cep.index.forests.weights`).

    Raises
    ------
    InputError
        If the group has no order instance (naming the events that cannot all fit).
    IndexBuildError
        If it needs more nodes than the budget (naming the group, a lower bound of its
        size and what to do), or if memory runs out while it is built.
    """
    try:
        with _recursion_for(len(t_lo)):
            forest = None
            if pair_check is None and settings.multi_tree:
                forest = forest_of_clusters(t_lo, t_hi, settings.node_budget, weights)
            if forest is None:
                forest = build_forest(plan_group(t_lo, t_hi, pair_check, settings.multi_tree,
                                                 settings.node_budget, weights))
    except ZeroDivisionError:
        # Only weighted sums reach zero (integer counts never do): they underflowed.
        raise _underflow(label) from None
    except GroupInfeasible as e:
        names = ", ".join(repr(plain(event_ids[i])) for i in e.events)
        if weights is not None:
            raise InputError(f"group {plain(label)!r} has no order instance of positive weight: "
                             f"events {names} cannot all be placed at distinct instants "
                             + ("satisfying Condition 2 " if pair_check is not None else "")
                             + "where their instant weights (t_mu/t_sigma or t_weights) are "
                             "above zero; widen their intervals or their distributions"
                             ) from None
        if e.window is None:
            violation = hall_violation({i: interval(int(t_lo[i]), int(t_hi[i]))
                                        for i in e.events})
            window = violation.window if violation else None
        else:
            window = e.window
        where = (f" all lie within instants [{window[0]}, {window[1]}], "
                 f"{window[1] - window[0] + 1} instants for {len(e.events)} events"
                 if window else " cannot all be placed at distinct instants"
                 + (" satisfying Condition 2" if pair_check is not None else ""))
        raise InputError(f"group {plain(label)!r} has no order instance: events {names}{where}; "
                         "widen their intervals or use a finer time unit") from None
    except IndexBuildError as e:
        raise IndexBuildError(f"{_too_large(label, len(t_lo))}: {e}; {_REMEDY}raise "
                              f"node_budget= (now {_budget(settings)})") from None
    except MemoryError as e:
        # Within the budget, yet more than this process can hold (a large budget, or
        # little memory): the same advice, never a bare MemoryError.
        raise IndexBuildError(f"{_too_large(label, len(t_lo))}: memory ran out while building "
                              f"its OI-trees (node_budget= is {_budget(settings)}); {_REMEDY}"
                              "give the build more memory") from e
    if weights is not None:
        _check_weighted(forest, label)
    return forest


def _check_weighted(forest: GroupForest, label: object) -> None:
    """Refuse a weighted forest whose probabilities left the doubles' range (SEMANTICS A6:
    weighted sums of products over many events can underflow)."""
    bad = ~(np.isfinite(forest.poi) & (forest.poi > 0) & np.isfinite(forest.cond)
            & (forest.cond > 0))
    if bad.any():
        raise _underflow(label)


def _underflow(label: object) -> IndexBuildError:
    return IndexBuildError(f"group {plain(label)!r}: its instant weights (SEMANTICS A6) make "
                           "some order instances' probabilities smaller than a double holds; "
                           "give its events' weights smaller ratios (a larger t_sigma, no "
                           "near-zero weights beside large ones) or split the group")


# What to do about a group too large to index (the CLI spells keywords as its flags).
_REMEDY = ("use a coarser time unit (time_unit= with a larger unit) so that intervals span "
           "fewer instants, split the group into smaller dependency groups, or ")


def _too_large(label: object, n_events: int) -> str:
    return f"group {plain(label)!r} ({n_events} events) is too large to index"


def _budget(settings: BuildSettings) -> str:
    return "unset" if settings.node_budget is None else f"{settings.node_budget:,}"


def piece_forests(t_lo: Sequence[int], t_hi: Sequence[int], shard: np.ndarray,
                  settings: BuildSettings, weights: GroupWeights | None = None
                  ) -> dict[int, PieceForest | None] | None:
    """The forests of a group's pieces cut out of the group's forest at once
    (:func:`~uncertain_cep.index.forests.piece_forests.split_group_forest`): per shard,
    the rows :func:`build_group_forest` gives for the piece, or ``None`` for a piece it
    must build itself. ``t_lo``, ``t_hi``: the group's events in canonical order;
    ``shard``: each event's (whole clusters, ascending); ``weights``: their instant
    weights (SEMANTICS A6), if any.

    ``None`` when the pieces must be built one by one: under Condition 2, for a single
    tree or paper codes, or when the group's forest is not one of clusters, cannot be
    built (no order instance) or needs more nodes than the budget (each piece may still
    fit; built alone, each says so itself).
    """
    if settings.condition2 is not None or not settings.multi_tree or \
            settings.codes != "compact":
        return None
    try:
        with _recursion_for(len(t_lo)):
            forest = forest_of_clusters(t_lo, t_hi, settings.node_budget, weights)
    except NodeBudgetExceeded:
        return None
    if forest is None:
        return None
    if weights is not None:
        # The forest's clusters are those of the instants of positive weight (finer than
        # the intervals' clusters a shard keeps whole).
        lo, hi = weights.support(np.asarray(t_lo), np.asarray(t_hi))
        cut = split_group_forest(forest, lo, hi, shard)
    else:
        cut = split_group_forest(forest, t_lo, t_hi, shard)
    return None if cut is None else dict(cut)


@contextmanager
def _recursion_for(n_events: int) -> Iterator[None]:
    """Room for planning and instantiating a group, restored afterwards: both recurse a
    few frames per event along a root-to-leaf path, and pure-Python recursion does not use
    the C stack on 3.11+, so a deeper limit is safe while they run."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 1_000 + 8 * n_events))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
