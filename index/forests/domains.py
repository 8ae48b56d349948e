"""The instants an unplaced event may still take, as sorted disjoint intervals.

While the OI-trees of a group are planned (Zhou et al. 4.1), every unplaced event keeps a
*domain*: the instants it may still take. A domain starts as the event's interval
``[t_lo, t_hi]`` and only loses instants: everything up to the instant just placed
(Condition 1), everything closer than Condition 2's minimum gap, and the windows of
Lemma 1 (4.1.2), which may cut a hole in the middle. Storing the instants one by one
would cost memory and time per instant (a group of three events 100,000 instants wide
needed gigabytes before planning started), so a domain is a tuple of inclusive
``(first, last)`` intervals, sorted and disjoint; empty means no instant is left.

>>> d = interval(0, 9)
>>> d = without(d, 3, 4)
>>> d, first(d), last(d), n_instants(d)
(((0, 2), (5, 9)), 0, 9, 8)
>>> later_than(d, 1), later_than(d, 6), later_than(d, 9)
(((2, 2), (5, 9)), ((7, 9),), ())
>>> list(instants(later_than(d, 6))), from_instants([1, 2, 3, 7, 9, 10])
([7, 8, 9], ((1, 3), (7, 7), (9, 10)))
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["Domain", "first", "from_instants", "instants", "interval", "last", "later_than",
           "n_instants", "without"]

Domain = tuple[tuple[int, int], ...]


def interval(lo: int, hi: int) -> Domain:
    """The domain of every instant from ``lo`` to ``hi`` inclusive."""
    return ((int(lo), int(hi)),) if lo <= hi else ()


def first(domain: Domain) -> int:
    """Earliest instant of a non-empty domain."""
    return domain[0][0]


def last(domain: Domain) -> int:
    """Latest instant of a non-empty domain."""
    return domain[-1][1]


def n_instants(domain: Domain) -> int:
    """Number of instants in the domain."""
    return sum(hi - lo + 1 for lo, hi in domain)


def instants(domain: Domain) -> Iterator[int]:
    """Every instant of the domain, ascending."""
    for lo, hi in domain:
        yield from range(lo, hi + 1)


def later_than(domain: Domain, t: int) -> Domain:
    """The instants of the domain after ``t``."""
    for i, (lo, hi) in enumerate(domain):
        if hi > t:
            if lo > t:
                return domain[i:] if i else domain
            return ((t + 1, hi),) + domain[i + 1:]
    return ()


def without(domain: Domain, a: int, b: int) -> Domain:
    """The domain less the instants of the window ``[a, b]``."""
    out: list[tuple[int, int]] = []
    for lo, hi in domain:
        if hi < a or lo > b:
            out.append((lo, hi))
            continue
        if lo < a:
            out.append((lo, a - 1))
        if hi > b:
            out.append((b + 1, hi))
    return tuple(out)


def from_instants(ascending: Iterable[int]) -> Domain:
    """The domain holding exactly the given instants (ascending, no repeats)."""
    out: list[tuple[int, int]] = []
    for t in ascending:
        if out and out[-1][1] == t - 1:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return tuple(out)
