"""Probability mass of an attribute's pdf over an allowed interval (SEMANTICS A3).

A numeric attribute of an event is a range ``[lo, hi]`` with a pdf: uniform, a point
(``lo == hi``), or a normal ``N(mu, sigma)`` truncated to the range.

>>> import numpy as np
>>> from uncertain_cep.model.attributes import NumericAttribute
>>> attr = NumericAttribute("x", np.array([0.0, 2.0]), np.array([4.0, 2.0]))
>>> interval_mass(attr, np.array([0, 1]), 1.0, 2.0, False, False).tolist()
[0.25, 1.0]
>>> interval_mass(attr, np.array([0, 1]), 2.0, np.inf, True, False).tolist()
[0.5, 0.0]
"""

from __future__ import annotations

import numpy as np

from uncertain_cep.model.attributes import NumericAttribute

__all__ = ["interval_mass"]


def interval_mass(attr: NumericAttribute, rows: np.ndarray, low: float, high: float,
                  low_open: bool, high_open: bool) -> np.ndarray:
    """Probability that each event's value of ``attr`` lies in the interval ``low..high``.

    ``low_open``/``high_open`` say whether the bound itself is excluded; that matters only
    for point values, since the continuous pdfs give a single value no mass.
    """
    lo, hi = attr.lo[rows], attr.hi[rows]
    out = np.zeros(len(rows))
    point = lo == hi
    if point.any():
        v = lo[point]
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        out[point] = (above & below).astype(float)
    spread = ~point
    if not spread.any():
        return out
    a = np.maximum(lo[spread], low)
    b = np.minimum(hi[spread], high)
    width = hi[spread] - lo[spread]
    uniform = np.clip(b - a, 0.0, None) / width
    if attr.mu is not None and attr.sigma is not None:
        mu, sigma = attr.mu[rows][spread], attr.sigma[rows][spread]
        normal = ~np.isnan(mu)
        if normal.any():
            uniform[normal] = _truncated_normal_mass(
                mu[normal], sigma[normal], lo[spread][normal], hi[spread][normal],
                a[normal], b[normal])
    out[spread] = uniform
    return out


def _truncated_normal_mass(mu: np.ndarray, sigma: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                           a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mass of ``[a, b]`` under ``N(mu, sigma)`` truncated to ``[lo, hi]``.

    scipy's ``truncnorm`` works in log space in the far tails, where the range's own mass
    underflows (mu dozens of sigmas away). Of ``cdf(b) - cdf(a)`` and ``sf(a) - sf(b)`` the
    one with the smaller terms is taken, so no digits cancel.
    """
    # Imported here: scipy.stats takes about a second to import, and only archives with
    # Gaussian attributes need it.
    from scipy.stats import truncnorm

    za_range, zb_range = (lo - mu) / sigma, (hi - mu) / sigma
    za, zb = (a - mu) / sigma, (np.maximum(a, b) - mu) / sigma
    dist = truncnorm(za_range, zb_range)
    lower = dist.cdf(za)
    upper_tail = lower > 0.5
    mass = np.where(upper_tail, dist.sf(za) - dist.sf(zb), dist.cdf(zb) - lower)
    return np.clip(np.where(b > a, mass, 0.0), 0.0, 1.0)
