"""Condition 2 of SEMANTICS A2: a pairwise feasibility predicate within a group.

Every pair ``(a, b)`` of one dependency group with ``ts(a) < ts(b)`` must satisfy the
predicate in a valid world. The built-in one is a maximum speed over named coordinate
attributes: ``mindist(a, b) <= v_max * (ts(b) - ts(a))``, with ``mindist`` the smallest
Euclidean distance between the events' boxes. Users may pass any function of two events
and their instants instead (:class:`PairPredicate`).

>>> import pandas as pd
>>> from uncertain_cep.model.events import read_archive
>>> df = pd.DataFrame({"event_id": [1, 2], "group": [0, 0], "t_lo": [0, 0], "t_hi": [3, 3],
...                    "x_lo": [0.0, 10.0], "x_hi": [1.0, 12.0], "y": [0.0, 0.0]})
>>> check = MaxSpeed(3.0, ("x", "y")).for_group(read_archive(df), [0, 1])
>>> check.allows(0, 1, 0, 3), check.allows(0, 1, 0, 2)
(True, False)
>>> check.min_gap(0, 1)
3
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from uncertain_cep.errors import InputError
from uncertain_cep.model.events import Archive

__all__ = ["GroupPairCheck", "MaxSpeed", "PairConstraint", "PairPredicate", "event_view"]


class GroupPairCheck(Protocol):
    """Condition 2 bound to one group; events are addressed by their position in it."""

    def allows(self, i: int, j: int, ti: int, tj: int) -> bool:
        """Whether event ``i`` at ``ti`` and event ``j`` at ``tj > ti`` may coexist."""
        ...

    def min_gap(self, i: int, j: int) -> int | None:
        """Smallest ``tj - ti`` that ``allows`` accepts, if the predicate is monotone in the
        gap (``None`` when unknown); lets the index builder skip instant-by-instant checks."""
        ...


class PairConstraint(Protocol):
    """Something that can be bound to a group: the built-in :class:`MaxSpeed` or a user's
    :class:`PairPredicate`."""

    def for_group(self, archive: Archive,
                  members: Sequence[int] | np.ndarray) -> GroupPairCheck: ...


@dataclass(frozen=True)
class MaxSpeed:
    """Maximum-speed Condition 2: ``mindist(a, b) <= v_max * (ts(b) - ts(a))``.

    Parameters
    ----------
    v_max
        Largest distance covered per instant (>= 0).
    coordinates
        Names of the numeric attributes spanning the space (e.g. ``("x", "y")``).
    """

    v_max: float
    coordinates: tuple[str, ...] = ("x", "y")

    def __post_init__(self) -> None:
        v = self.v_max
        if isinstance(v, bool) or not (isinstance(v, numbers.Real) and math.isfinite(v)
                                       and v >= 0):
            raise InputError(f"max_speed must be a finite number >= 0, got {v!r}")
        object.__setattr__(self, "v_max", float(v))
        coords = self.coordinates
        # A lone name is one coordinate, not a sequence of one-letter names.
        coords = (coords,) if isinstance(coords, str) else tuple(coords)
        if not coords:
            raise InputError("max_speed needs at least one coordinate attribute")
        object.__setattr__(self, "coordinates", coords)

    def for_group(self, archive: Archive, members: Sequence[int] | np.ndarray) -> _SpeedCheck:
        for c in self.coordinates:
            if c not in archive.numeric:
                raise InputError(f"max_speed coordinate {c!r} is not a numeric attribute of the "
                                 f"archive (numeric attributes: {list(archive.numeric)})")
        idx = np.asarray(members, dtype=np.int64)
        sq = np.zeros((len(idx), len(idx)))
        for c in self.coordinates:
            lo, hi = archive.numeric[c].lo[idx], archive.numeric[c].hi[idx]
            # Gap between two ranges along one axis; 0 where they overlap.
            gap = np.maximum(0.0, np.maximum(lo[:, None] - hi[None, :], lo[None, :] - hi[:, None]))
            sq += gap * gap
        return _SpeedCheck(np.sqrt(sq), float(self.v_max))


_NEVER = 2**52  # past this, doubles skip integers and ceil() is no longer exact


class _SpeedCheck:
    def __init__(self, mindist: np.ndarray, v_max: float) -> None:
        self._mindist = mindist
        self._v = v_max

    def allows(self, i: int, j: int, ti: int, tj: int) -> bool:
        return bool(self._mindist[i, j] <= self._v * (tj - ti))

    def min_gap(self, i: int, j: int) -> int | None:
        d = self._mindist[i, j]
        if d == 0:
            return 1
        if self._v == 0:
            return None
        quotient = d / self._v
        if not quotient < _NEVER:
            return None  # beyond exact doubles: let callers test instants with allows()
        gap = max(1, math.ceil(quotient))
        # ceil of a float quotient can be off by one; settle it with the exact test.
        while gap > 1 and self.allows(i, j, 0, gap - 1):
            gap -= 1
        while not self.allows(i, j, 0, gap):
            gap += 1
        return gap


def event_view(archive: Archive, i: int) -> dict[str, Any]:
    """One event as a plain dict: ids, time bounds, ``(lo, hi)`` per numeric attribute and
    the value of every categorical one. What a user's pair predicate receives."""
    row: dict[str, Any] = {"event_id": archive.event_ids[i],
                           "group": archive.group_labels[archive.group_of[i]],
                           "t_lo": int(archive.t_lo[i]), "t_hi": int(archive.t_hi[i])}
    for name, attr in archive.numeric.items():
        row[name] = (float(attr.lo[i]), float(attr.hi[i]))
    for name, values in archive.categorical.items():
        row[name] = values[i]
    return row


@dataclass(frozen=True)
class PairPredicate:
    """A user-given Condition 2: ``func(a, b, ta, tb) -> bool`` for ``ta < tb``, where ``a``
    and ``b`` are :func:`event_view` dicts. Called for every pair of instants the index
    builder considers, so keep it cheap."""

    func: Callable[[Mapping[str, Any], Mapping[str, Any], int, int], bool]

    def for_group(self, archive: Archive, members: Sequence[int] | np.ndarray) -> _UserCheck:
        return _UserCheck([event_view(archive, int(i)) for i in members], self.func)


class _UserCheck:
    def __init__(self, views: list[dict[str, Any]],
                 func: Callable[[Mapping[str, Any], Mapping[str, Any], int, int], bool]) -> None:
        self._views = views
        self._func = func

    def allows(self, i: int, j: int, ti: int, tj: int) -> bool:
        return bool(self._func(self._views[i], self._views[j], ti, tj))

    def min_gap(self, i: int, j: int) -> int | None:
        return None
