"""The paper's synthetic sequences (Zhou et al. section 6.1).

``N`` objects with ``d`` Gaussian attributes get timestamps from a domain of ``10 N``
instants, either uniformly or clustered into 10 Gaussian clusters; then each timestamp is
widened into an interval of ``f`` possible instants (``f`` drawn per event from a range)
containing the true one, and each attribute into a range around its value. Objects are
spread over ``groups`` dependency groups at random. Each group's true timestamps are
distinct, so every group has an order instance.

``weights=`` also gives each event a weight per instant (SEMANTICS A6): ``"normal"``,
``t_mu``/``t_sigma`` columns (a reader's jitter around the true instant's centre);
``"list"``, a ``t_weights`` list of random weights, some zero, never the true
instant's (so every group keeps an order instance of positive weight).

>>> df = generate_synthetic(100, groups=4, seed=1)
>>> len(df), sorted(df.columns)[:4]
(100, ['a0_hi', 'a0_lo', 'a1_hi', 'a1_lo'])
>>> bool((df.t_hi - df.t_lo + 1).between(2, 5).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import ParamEnum

__all__ = ["WeightKind", "disjoint_sequence", "generate_synthetic", "instant_weight_columns",
           "nearest_free"]


class WeightKind(ParamEnum):
    """Valid values of ``weights=``."""

    normal = "normal"
    list = "list"


def generate_synthetic(n: int, *, groups: int = 1, d: int = 2, f: tuple[int, int] = (2, 5),
                       clustered: bool = False, cluster_spread: float = 1 / 40,
                       value_width: float = 0.2, seed: int = 0,
                       domain: int | None = None, weights: str | None = None) -> pd.DataFrame:
    """Generate ``n`` uncertain events as the paper describes.

    Parameters
    ----------
    n
        Number of events.
    groups
        Number of dependency groups (events assigned uniformly at random).
    d
        Number of Gaussian attributes ``a0 .. a{d-1}``.
    f
        Inclusive range of the number of possible instants per event.
    clustered
        Timestamps in 10 Gaussian clusters instead of uniform over the domain.
    cluster_spread
        Standard deviation of a cluster, as a fraction of the time domain.
    value_width
        Half-width of each attribute range, in standard deviations (drawn uniformly up to it).
    domain
        True timestamps are drawn from ``[0, domain)`` (default ``10 * n``, the paper's).
        A larger archive can be generated in pieces of groups, each over the whole
        archive's domain.
    weights
        ``None`` (equal weights), ``"normal"`` or ``"list"``: see the module's text.

    >>> df = generate_synthetic(5, seed=2, weights="normal")
    >>> bool(((df.t_mu >= df.t_lo) & (df.t_mu <= df.t_hi + 1) & (df.t_sigma > 0)).all())
    True
    """
    kind = None if weights is None else WeightKind(WeightKind.get_value(weights))
    rng = np.random.default_rng(seed)
    domain = 10 * n if domain is None else domain
    group = rng.integers(0, groups, size=n)
    truth = np.empty(n, dtype=np.int64)
    # Each group's events in ascending order, found by one sort (not a scan per group:
    # 100,000 groups of 100M events).
    by_group = np.argsort(group, kind="stable")
    ends = np.cumsum(np.bincount(group, minlength=groups))
    for g in range(groups):
        idx = by_group[(ends[g - 1] if g else 0):ends[g]]
        truth[idx] = _timestamps(rng, len(idx), domain, clustered, cluster_spread)
    width = rng.integers(f[0], f[1] + 1, size=n)
    left = rng.integers(0, width)
    cols: dict[str, object] = {
        "event_id": np.arange(n, dtype=np.int64), "group": group,
        "t_lo": truth - left, "t_hi": truth - left + width - 1}
    for a in range(d):
        value = rng.normal(size=n)
        half = rng.uniform(0, value_width, size=n)
        cols[f"a{a}_lo"] = value - half
        cols[f"a{a}_hi"] = value + half
    cols.update(instant_weight_columns(rng, kind, truth, left, width))
    order = np.argsort(truth, kind="stable")
    return pd.DataFrame(cols).iloc[order].reset_index(drop=True)


def instant_weight_columns(rng: np.random.Generator, kind: WeightKind | str | None,
                           truth: np.ndarray, left: np.ndarray, width: np.ndarray
                           ) -> dict[str, Any]:
    """Instant weights for events whose true instants are ``truth`` and intervals
    ``truth - left`` to ``truth - left + width - 1`` (SEMANTICS A6): ``"normal"``, a
    normal around the true instant's centre (sigma a quarter of the interval, at least
    half an instant, its centre off by up to half that); ``"list"``, random weights with
    zeros but never at the true instant; ``None``, no columns. Either way the true world
    keeps a positive weight.

    >>> rng = np.random.default_rng(0)
    >>> sorted(instant_weight_columns(rng, "normal", np.array([5]), np.array([1]),
    ...                               np.array([3])))
    ['t_mu', 't_sigma']
    """
    if kind is None:
        return {}
    kind = WeightKind(WeightKind.get_value(kind))
    if kind is WeightKind.normal:
        sigma = np.maximum(0.5, width / 4)
        return {"t_mu": np.clip(truth + 0.5 + rng.normal(0, sigma / 2), truth - left,
                                truth - left + width), "t_sigma": sigma}
    return {"t_weights": _listed_weights(rng, width, left)}


def _listed_weights(rng: np.random.Generator, width: np.ndarray, truth_at: np.ndarray
                    ) -> list[list[float]]:
    """Per event, ``width`` random weights, each zero with probability 1/5 but the true
    instant's (at position ``truth_at``), which is at least 0.05."""
    out = []
    for w, at in zip(width.tolist(), truth_at.tolist()):
        weights = rng.uniform(0.05, 1.0, size=w) * (rng.random(w) >= 0.2)
        weights[at] = max(weights[at], 0.05)
        out.append(weights.tolist())
    return out


def _timestamps(rng: np.random.Generator, k: int, domain: int, clustered: bool,
                spread: float) -> np.ndarray:
    """``k`` distinct instants in ``[0, domain)``."""
    if not clustered:
        return rng.choice(domain, size=k, replace=False)
    centers = rng.uniform(0.05 * domain, 0.95 * domain, size=10)
    raw = np.rint(rng.normal(centers[rng.integers(0, 10, size=k)], spread * domain)).astype(int)
    raw = np.clip(raw, 0, domain - 1)
    # Move collisions to the nearest free instant, so true timestamps stay distinct.
    return nearest_free(raw, domain)


def nearest_free(raw: np.ndarray, domain: int) -> np.ndarray:
    """Distinct instants in ``[0, domain)``: each of ``raw`` (all inside the domain), taken
    in order, keeps its instant if no earlier one has it, else moves to the nearest free
    instant (the later one on a tie).

    >>> nearest_free(np.array([3, 3, 3, 0]), 5).tolist()
    [3, 4, 2, 0]
    """
    if len(raw) > domain:
        raise ValueError(f"{len(raw)} distinct instants do not fit in a domain of {domain}")
    taken: set[int] = set()
    out = np.empty(len(raw), dtype=np.int64)
    for i, t in enumerate(raw.tolist()):
        step = 0
        while True:
            for cand in (t + step, t - step):
                if 0 <= cand < domain and cand not in taken:
                    break
            else:
                step += 1
                continue
            break
        taken.add(cand)
        out[i] = cand
    return out


def disjoint_sequence(n: int, f: int = 2) -> pd.DataFrame:
    """One group of ``n`` events with ``f`` possible instants each and disjoint intervals:
    every combination is an order instance (``f**n`` of them), the single tree's worst case
    (the paper's Table 5)."""
    lo = np.arange(n, dtype=np.int64) * f
    return pd.DataFrame({"event_id": np.arange(n), "group": 0, "t_lo": lo, "t_hi": lo + f - 1})
