"""Temporal relations between intervals as data: Allen's 13, succession, the operator hierarchy.

The parser, the brute-force matcher and the join engine read relations from here, so a
relation is defined once: by its endpoint restrictions (SEMANTICS B2; Li et al.'s ISEQ
"TList", section 3), which :func:`holds` evaluates vectorised.

>>> str(AllenRelation.overlaps), [str(r) for r in definition(AllenRelation.overlaps)]
('overlaps', ['A.ts < B.ts', 'B.ts < A.te', 'A.te < B.te'])
>>> inverse(AllenRelation.meets)
<AllenRelation.met_by: 'met_by'>
>>> allen_relation(1, 4, 4, 9)
<AllenRelation.meets: 'meets'>
>>> sorted(str(r) for r in HierarchyOperator.SOSEQ.relations)
['meets', 'overlaps']
>>> lookup_relation("Overlapped-By")
<AllenRelation.overlapped_by: 'overlapped_by'>
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from uncertain_cep.errors import InputError, InvalidOptionError, ParamEnum

__all__ = [
    "ALLEN_RELATIONS",
    "AllenRelation",
    "Endpoint",
    "EndpointRestriction",
    "HierarchyOperator",
    "SuccessionRelation",
    "allen_relation",
    "classify",
    "definition",
    "holds",
    "inverse",
    "lookup_relation",
    "normalise_name",
]


class Endpoint(ParamEnum):
    """An interval's start ``ts`` (inclusive) or end ``te`` (exclusive)."""

    ts = "ts"
    te = "te"

    def __str__(self) -> str:
        return self.value


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, "=": operator.eq, ">=": operator.ge, ">": operator.gt,
}


@dataclass(frozen=True)
class EndpointRestriction:
    """``left.left_end op right.right_end``: one entry of an ISEQ TList (Li et al. 3).

    Parameters
    ----------
    left, right : str
        Symbol names (in relation definitions the placeholders ``A`` and ``B``).
    left_end, right_end : Endpoint or str
        ``"ts"`` or ``"te"``.
    op : str
        One of ``<``, ``<=``, ``=``, ``>=``, ``>``.

    Examples
    --------
    >>> r = EndpointRestriction("A", "ts", "<", "C", "ts")
    >>> str(r), r.evaluate({"A": ([1, 5], [2, 6]), "C": ([3, 3], [4, 4])}).tolist()
    ('A.ts < C.ts', [True, False])
    """

    left: str
    left_end: Endpoint
    op: str
    right: str
    right_end: Endpoint

    def __post_init__(self) -> None:
        for name in (self.left, self.right):
            if not isinstance(name, str) or not name:
                raise InvalidOptionError(f"an endpoint restriction names symbols, got {name!r}")
        object.__setattr__(self, "left_end", Endpoint(Endpoint.get_value(self.left_end)))
        object.__setattr__(self, "right_end", Endpoint(Endpoint.get_value(self.right_end)))
        if self.op not in _COMPARISONS:
            raise InvalidOptionError(
                f"{self.op!r} is not an endpoint comparison; choose one of: "
                + ", ".join(repr(op) for op in _COMPARISONS))

    @property
    def symbols(self) -> tuple[str, str]:
        return self.left, self.right

    def evaluate(self, endpoints: Mapping[str, tuple[ArrayLike, ArrayLike]]) -> np.ndarray:
        """Whether the restriction holds, elementwise; ``endpoints[s]`` is ``(ts, te)`` of s."""
        left = np.asarray(endpoints[self.left][self.left_end is Endpoint.te])
        right = np.asarray(endpoints[self.right][self.right_end is Endpoint.te])
        return np.asarray(_COMPARISONS[self.op](left, right), dtype=bool)

    def __str__(self) -> str:
        return f"{self.left}.{self.left_end} {self.op} {self.right}.{self.right_end}"


def _restrictions(*texts: str) -> tuple[EndpointRestriction, ...]:
    out = []
    for text in texts:
        left, op, right = text.split()
        (ls, le), (rs, re_) = left.split("."), right.split(".")
        out.append(EndpointRestriction(ls, Endpoint(le), op, rs, Endpoint(re_)))
    return tuple(out)


class AllenRelation(ParamEnum):
    """Allen's 13 interval relations, read as ``A <relation> B`` (SEMANTICS B2)."""

    before = "before"
    meets = "meets"
    overlaps = "overlaps"
    starts = "starts"
    during = "during"
    finishes = "finishes"
    equals = "equals"
    after = "after"
    met_by = "met_by"
    overlapped_by = "overlapped_by"
    started_by = "started_by"
    contains = "contains"
    finished_by = "finished_by"

    def __str__(self) -> str:
        return self.value


#: The 13 relations in a fixed order (the order :func:`classify` numbers them by).
ALLEN_RELATIONS: tuple[AllenRelation, ...] = tuple(AllenRelation)

_DEFINITIONS: dict[AllenRelation, tuple[EndpointRestriction, ...]] = {
    AllenRelation.before: _restrictions("A.te < B.ts"),
    AllenRelation.meets: _restrictions("A.te = B.ts"),
    AllenRelation.overlaps: _restrictions("A.ts < B.ts", "B.ts < A.te", "A.te < B.te"),
    AllenRelation.starts: _restrictions("A.ts = B.ts", "A.te < B.te"),
    AllenRelation.during: _restrictions("B.ts < A.ts", "A.te < B.te"),
    AllenRelation.finishes: _restrictions("B.ts < A.ts", "A.te = B.te"),
    AllenRelation.equals: _restrictions("A.ts = B.ts", "A.te = B.te"),
    # The inverses: the same formulas with A and B swapped.
    AllenRelation.after: _restrictions("B.te < A.ts"),
    AllenRelation.met_by: _restrictions("B.te = A.ts"),
    AllenRelation.overlapped_by: _restrictions("B.ts < A.ts", "A.ts < B.te", "B.te < A.te"),
    AllenRelation.started_by: _restrictions("B.ts = A.ts", "B.te < A.te"),
    AllenRelation.contains: _restrictions("A.ts < B.ts", "B.te < A.te"),
    AllenRelation.finished_by: _restrictions("A.ts < B.ts", "B.te = A.te"),
}

_INVERSES: dict[AllenRelation, AllenRelation] = {}
for _first, _second in zip(ALLEN_RELATIONS[:7], (AllenRelation.after, AllenRelation.met_by,
                                                 AllenRelation.overlapped_by,
                                                 AllenRelation.started_by,
                                                 AllenRelation.contains,
                                                 AllenRelation.finished_by,
                                                 AllenRelation.equals)):
    _INVERSES[_first] = _second
    _INVERSES[_second] = _first


def definition(relation: AllenRelation) -> tuple[EndpointRestriction, ...]:
    """The endpoint restrictions (a conjunction over placeholders A, B) defining ``relation``.

    >>> [str(r) for r in definition(AllenRelation.during)]
    ['B.ts < A.ts', 'A.te < B.te']
    """
    return _DEFINITIONS[AllenRelation(AllenRelation.get_value(relation))]


def inverse(relation: AllenRelation) -> AllenRelation:
    """The relation ``r'`` with ``A r B`` iff ``B r' A``; ``equals`` is its own inverse.

    >>> inverse(AllenRelation.equals), inverse(AllenRelation.contains)
    (<AllenRelation.equals: 'equals'>, <AllenRelation.during: 'during'>)
    """
    return _INVERSES[AllenRelation(AllenRelation.get_value(relation))]


def holds(relation: AllenRelation, a_ts: ArrayLike, a_te: ArrayLike, b_ts: ArrayLike,
          b_te: ArrayLike) -> np.ndarray:
    """Whether ``A relation B`` holds, elementwise over broadcast endpoint arrays.

    >>> holds(AllenRelation.before, [0, 0], [2, 2], [3, 2], [5, 5]).tolist()
    [True, False]
    """
    endpoints = {"A": (a_ts, a_te), "B": (b_ts, b_te)}
    result = np.ones(np.broadcast_shapes(*(np.shape(x) for x in (a_ts, a_te, b_ts, b_te))),
                     dtype=bool)
    for restriction in definition(relation):
        result &= restriction.evaluate(endpoints)
    return result


def classify(a_ts: ArrayLike, a_te: ArrayLike, b_ts: ArrayLike, b_te: ArrayLike) -> np.ndarray:
    """Index into :data:`ALLEN_RELATIONS` of the relation each pair of intervals is in.

    Raises
    ------
    InputError
        If an interval is not valid (``ts < te`` fails, or a NaN), naming its position.

    >>> [str(ALLEN_RELATIONS[i]) for i in classify([0, 0, 3], [4, 4, 5], [0, 1, 0], [4, 2, 9])]
    ['equals', 'contains', 'during']
    """
    a_ts, a_te, b_ts, b_te = np.broadcast_arrays(*(np.asarray(x) for x in (a_ts, a_te, b_ts,
                                                                         b_te)))
    for name, ts, te in (("A", a_ts, a_te), ("B", b_ts, b_te)):
        bad = ~(ts < te)
        if bad.any():
            position = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"interval {name} at position {position} has ts "
                             f"{ts[bad].flat[0]} not before te {te[bad].flat[0]}")
    masks = np.stack([holds(r, a_ts, a_te, b_ts, b_te) for r in ALLEN_RELATIONS])
    # For valid intervals the 13 definitions partition all cases (tested); argmax of the
    # one True per column is the relation.
    return np.argmax(masks, axis=0)


def allen_relation(a_ts: float, a_te: float, b_ts: float, b_te: float) -> AllenRelation:
    """The one Allen relation ``r`` with ``[a_ts, a_te) r [b_ts, b_te)``.

    >>> allen_relation(2, 5, 0, 5), allen_relation(0, 1, 3, 4)
    (<AllenRelation.finishes: 'finishes'>, <AllenRelation.before: 'before'>)
    """
    return ALLEN_RELATIONS[int(classify(a_ts, a_te, b_ts, b_te))]


class SuccessionRelation(ParamEnum):
    """``followed_by`` and its inverse ``follows`` (SEMANTICS B2; Chen et al., Definition 5).

    ``A followed_by B`` is ``A before B`` where no *other* situation of A's or B's symbol
    intersects the gap ``[A.te, B.ts)``; deciding that needs the other situations, so only
    the data lives here and the matchers evaluate it.
    """

    followed_by = "followed_by"
    follows = "follows"

    def __str__(self) -> str:
        return self.value

    @property
    def base(self) -> AllenRelation:
        """The Allen relation every pair in this relation is also in."""
        if self is SuccessionRelation.followed_by:
            return AllenRelation.before
        return AllenRelation.after

    @property
    def inverse(self) -> SuccessionRelation:
        if self is SuccessionRelation.followed_by:
            return SuccessionRelation.follows
        return SuccessionRelation.followed_by


_R = AllenRelation
_SEQ = frozenset({_R.before, _R.meets, _R.overlaps, _R.starts, _R.during})


class HierarchyOperator(ParamEnum):
    """Bhandari and Urban's operator hierarchy (V-B, Fig. 4), read as ``A <op> B``.

    Each operator is a set of Allen relations (SEMANTICS B2) and, equivalently, one TList
    (a conjunction of endpoint restrictions; the paper's Table II and III).
    """

    AND = "AND"
    SEQ = "SEQ"
    ISEQ = "ISEQ"
    CAND = "CAND"
    BEFORE = "BEFORE"
    OSEQ = "OSEQ"
    SOSEQ = "SOSEQ"
    WOSEQ = "WOSEQ"
    ENDS = "ENDS"
    IENDS = "IENDS"
    EQUALS = "EQUALS"

    def __str__(self) -> str:
        return self.value

    @property
    def relations(self) -> frozenset[AllenRelation]:
        return _HIERARCHY_SETS[self]

    @property
    def restrictions(self) -> tuple[EndpointRestriction, ...]:
        """The operator as one TList over A and B (empty for AND: no restriction).

        >>> [str(r) for r in HierarchyOperator.WOSEQ.restrictions]
        ['A.ts >= B.ts', 'A.te < B.te']
        """
        return _HIERARCHY_RESTRICTIONS[self]


_HIERARCHY_SETS: dict[HierarchyOperator, frozenset[AllenRelation]] = {
    HierarchyOperator.AND: frozenset(ALLEN_RELATIONS),
    HierarchyOperator.SEQ: _SEQ,
    HierarchyOperator.ISEQ: frozenset(_INVERSES[r] for r in _SEQ),
    HierarchyOperator.CAND: frozenset({_R.finishes, _R.equals, _R.finished_by}),
    HierarchyOperator.BEFORE: frozenset({_R.before}),
    HierarchyOperator.OSEQ: frozenset({_R.meets, _R.overlaps, _R.starts, _R.during}),
    HierarchyOperator.SOSEQ: frozenset({_R.meets, _R.overlaps}),
    HierarchyOperator.WOSEQ: frozenset({_R.starts, _R.during}),
    HierarchyOperator.ENDS: frozenset({_R.finishes}),
    HierarchyOperator.IENDS: frozenset({_R.finished_by}),
    HierarchyOperator.EQUALS: frozenset({_R.equals}),
}

# The TList forms. Table II's rows 6 and 8 swap the start comparison of ENDS and IENDS;
# Allen's "finishes" (SEMANTICS ENDS) starts later, as Table III's rules 7-9 have it.
_HIERARCHY_RESTRICTIONS: dict[HierarchyOperator, tuple[EndpointRestriction, ...]] = {
    HierarchyOperator.AND: (),
    HierarchyOperator.SEQ: _restrictions("A.te < B.te"),
    HierarchyOperator.ISEQ: _restrictions("A.te > B.te"),
    HierarchyOperator.CAND: _restrictions("A.te = B.te"),
    HierarchyOperator.BEFORE: _restrictions("A.te < B.ts"),
    HierarchyOperator.OSEQ: _restrictions("A.te >= B.ts", "A.te < B.te"),
    HierarchyOperator.SOSEQ: _restrictions("A.ts < B.ts", "B.ts <= A.te", "A.te < B.te"),
    HierarchyOperator.WOSEQ: _restrictions("A.ts >= B.ts", "A.te < B.te"),
    HierarchyOperator.ENDS: _restrictions("A.te = B.te", "A.ts > B.ts"),
    HierarchyOperator.IENDS: _restrictions("A.te = B.te", "A.ts < B.ts"),
    HierarchyOperator.EQUALS: _restrictions("A.te = B.te", "A.ts = B.ts"),
}


def normalise_name(name: str) -> str:
    """Relation names compare in lower case with hyphens and spaces read as underscores.

    >>> normalise_name(" Overlapped-By ")
    'overlapped_by'
    """
    return "_".join(name.strip().lower().replace("-", " ").replace("_", " ").split())


_LOOKUP: dict[str, AllenRelation | SuccessionRelation | HierarchyOperator] = {
    **{normalise_name(op.value): op for op in HierarchyOperator},
    # Allen's names win over the hierarchy's BEFORE and EQUALS: the same sets either way.
    **{r.value: r for r in AllenRelation},
    **{r.value: r for r in SuccessionRelation},
}


def lookup_relation(name: str) -> AllenRelation | SuccessionRelation | HierarchyOperator:
    """The relation or operator called ``name`` (any case; ``_``, ``-`` or space between words).

    Raises
    ------
    InvalidOptionError
        For an unknown name, listing every valid one.

    >>> lookup_relation("SEQ"), lookup_relation("followed-by")
    (<HierarchyOperator.SEQ: 'SEQ'>, <SuccessionRelation.followed_by: 'followed_by'>)
    >>> lookup_relation("overlapping")
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.InvalidOptionError: 'overlapping' is not a temporal relation; ...
    """
    found = _LOOKUP.get(normalise_name(name)) if isinstance(name, str) else None
    if found is None:
        valid = [r.value for r in AllenRelation] + [r.value for r in SuccessionRelation] + [
            op.value for op in HierarchyOperator if normalise_name(op.value) not in
            {r.value for r in AllenRelation}]
        raise InvalidOptionError(
            f"{name!r} is not a temporal relation; choose one of: {', '.join(valid)}")
    return found
