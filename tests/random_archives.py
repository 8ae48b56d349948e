"""Hypothesis strategies for small random archives and part-A patterns.

Archives: up to 4 groups and 12 events (at most 6 per group), intervals of 1-4 instants,
1-2 numeric attributes (uniform ranges, points, sometimes truncated normals) and a tag.
Every group is feasible by construction: each event's interval is drawn around a distinct
"true" instant of its group.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from uncertain_cep.query.language.patterns import (
    Between,
    Comparison,
    InSet,
    PatternItem,
    SequencePattern,
    Symbol,
)

__all__ = ["archives", "instant_weights", "patterns", "single_groups", "symbols"]


@st.composite
def single_groups(draw: st.DrawFn, max_events: int = 6,
                  min_events: int = 1) -> tuple[list[int], list[int]]:
    """(t_lo, t_hi) of one feasible group."""
    n = draw(st.integers(min(min_events, max_events), max_events))
    truth = draw(st.lists(st.integers(0, 2 * n + 2), min_size=n, max_size=n, unique=True))
    lo, hi = [], []
    for t in truth:
        width = draw(st.integers(1, 4))
        left = draw(st.integers(0, width - 1))
        lo.append(t - left)
        hi.append(t - left + width - 1)
    return lo, hi


@st.composite
def archives(draw: st.DrawFn, max_groups: int = 4, max_events: int = 12,
             max_per_group: int = 6) -> pd.DataFrame:
    n_groups = draw(st.integers(1, max_groups))
    two_attributes = draw(st.booleans())
    normals = draw(st.booleans())
    rows = []
    budget = max_events
    for g in range(n_groups):
        if budget <= 0:
            break
        lo, hi = draw(single_groups(max_events=min(max_per_group, budget), min_events=2))
        budget -= len(lo)
        for a, b in zip(lo, hi):
            row: dict[str, object] = {"event_id": len(rows), "group": f"g{g}", "t_lo": a,
                                      "t_hi": b}
            for attr in ("x", "y") if two_attributes else ("x",):
                x0 = draw(st.integers(0, 8))
                width = draw(st.sampled_from([0, 0, 1, 2, 3, 5]))
                row[f"{attr}_lo"] = float(x0)
                row[f"{attr}_hi"] = float(x0 + width)
                if normals and width > 0 and draw(st.booleans()):
                    row[f"{attr}_mu"] = x0 + draw(st.floats(0, width))
                    row[f"{attr}_sigma"] = draw(st.floats(0.3, 3.0))
                elif normals:
                    row[f"{attr}_mu"] = float("nan")
                    row[f"{attr}_sigma"] = float("nan")
            row["tag"] = draw(st.sampled_from(["a", "b"]))
            rows.append(row)
    return pd.DataFrame(rows)


@st.composite
def symbols(draw: st.DrawFn, name: str, attributes: tuple[str, ...]) -> Symbol:
    preds: list[object] = []
    for attr in attributes:
        kind = draw(st.sampled_from(["between", "ge", "lt", "none", "none"]))
        c = draw(st.integers(0, 10))
        if kind == "between":
            preds.append(Between(attr, float(c), float(c + draw(st.integers(2, 10)))))
        elif kind == "ge":
            preds.append(Comparison(attr, ">=", float(c)))
        elif kind == "lt":
            preds.append(Comparison(attr, "<", float(c)))
    if draw(st.integers(0, 6)) == 0:
        preds.append(InSet("tag", (draw(st.sampled_from(["a", "b"])),)))
    return Symbol(name, tuple(preds))  # type: ignore[arg-type]


@st.composite
def patterns(draw: st.DrawFn, attributes: tuple[str, ...] = ("x",), negation: bool | None = None,
             min_items: int = 2, max_items: int = 4) -> SequencePattern:
    """SEQ patterns of 2-4 items; negations (if allowed) only between positive items."""
    n_items = draw(st.integers(min_items, max_items))
    allow_not = draw(st.integers(0, 2)) > 0 if negation is None else negation
    negated = [False] * n_items
    if allow_not and n_items >= 3:
        for i in range(1, n_items - 1):
            if not negated[i - 1] and draw(st.booleans()):
                negated[i] = True
        if not any(negated):
            negated[draw(st.integers(1, n_items - 2))] = True
    names = [f"S{i}" for i in range(n_items)]
    reuse = draw(st.booleans())
    if reuse and n_items >= 2:
        names[-1] = names[0] if not negated[0] and not negated[-1] else names[-1]
    items = tuple(PatternItem(n, neg) for n, neg in zip(names, negated))
    defined = tuple(draw(symbols(n, attributes)) for n in dict.fromkeys(names))
    within = draw(st.one_of(st.none(), st.integers(0, 10)))
    confidence = draw(st.sampled_from([None, None, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5]))
    return SequencePattern(items, defined, within, confidence)


@st.composite
def instant_weights(draw: st.DrawFn, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with instant weights drawn per event: none, a list (zeros allowed, never
    all), or a normal around the interval (``t_mu`` may lie outside it)."""
    lists: list[list[float] | None] = []
    mu: list[float | None] = []
    sigma: list[float | None] = []
    for lo, hi in zip(df["t_lo"], df["t_hi"]):
        width = int(hi - lo + 1)
        kind = draw(st.sampled_from(["none", "list", "list", "normal"]))
        lists.append(None)
        mu.append(None)
        sigma.append(None)
        if kind == "list":
            w = draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.5, 4.0]), min_size=width,
                              max_size=width).filter(lambda v: any(v)))
            lists[-1] = w
        elif kind == "normal":
            mu[-1] = draw(st.floats(float(lo) - 1, float(hi) + 1))
            sigma[-1] = draw(st.sampled_from([0.3, 0.8, 2.0, 5.0]))
    return df.assign(t_weights=lists, t_mu=pd.array(mu, dtype="Float64"),
                     t_sigma=pd.array(sigma, dtype="Float64"))
