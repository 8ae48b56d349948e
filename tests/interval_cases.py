"""Hypothesis generators of part-B inputs: situation tables, point streams, patterns.

Shared by the tests of the reference matcher and of the engines compared with it.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    HierarchyOperator,
    inverse,
)

# Constraints over A, B, C of the reference's own property test.
CONSTRAINTS = ["A meets; overlaps; before B", "B during; starts C", "A SEQ C", "A followed_by C",
               "C.te >= B.ts", "A AND B", "B ISEQ A", "A CAND; equals C",
               "C overlapped-by; met_by A"]

SYMBOLS = "ABCD"

# SEMANTICS C's part-B example, exactly as written there (the contract's text, kept here
# apart from the package's copy, uncertain_cep.datasets.connected_car.AGGRESSIVE_DRIVERS,
# which tests/interval/test_join.py checks against it).
AGGRESSIVE_DRIVERS = """\
FROM CarSensors
PARTITION BY car_id
DEFINE A AS accel > 8 AT LEAST 5s,
       B AS speed > 70 DURATION BETWEEN 4s AND 30s,
       C AS accel < -9 AT MOST 10s
PATTERN A meets B; A overlaps B; A starts B; A during B
    AND C during B; B finishes C; B overlaps C; B meets C
    AND A SEQ C
    AND A.ts < C.ts
WITHIN 5 MINUTES
RETURN first(B.car_id) AS id, avg(B.speed) AS avg_speed
"""


def car(car_id: int, accel: dict[int, float], speed: dict[int, float]) -> pd.DataFrame:
    """One reading per second, t = 0..20; accel 0 and speed 60 unless given."""
    times = range(21)
    return pd.DataFrame({"car_id": car_id, "time": list(times),
                         "accel": [accel.get(t, 0.0) for t in times],
                         "speed": [speed.get(t, 60.0) for t in times]})


def aggressive_cars() -> pd.DataFrame:
    """Four cars for the aggressive-drivers query; cars 1 and 3 match (three matches)."""
    speeding = {t: 80.0 + (t - 3) for t in range(3, 15)}
    accelerating = {t: 10.0 for t in range(1, 7)}
    return pd.concat([
        car(1, {**accelerating, 10: -10.0, 11: -10.0}, speeding),
        car(2, {1: 10.0, 2: 10.0, 3: 10.0, 4: 10.0, 10: -10.0}, speeding),
        car(3, {**accelerating, 10: -10.0, 13: -10.0,
                **{t: -10.0 for t in range(16, 21)}}, speeding),
        # Car 4: the braking starts before the acceleration (A.ts < C.ts fails).
        car(4, {0: -10.0, **{t: 10.0 for t in range(1, 7)}}, speeding),
    ])


def spans(draw, n, horizon=30):
    """``n`` disjoint spans ``[ts, te)`` in ``[0, horizon]``, some touching end to start."""
    cuts = sorted(draw(st.lists(st.integers(0, horizon), min_size=2 * n, max_size=2 * n,
                                unique=True)))
    out = [(cuts[2 * i], cuts[2 * i + 1]) for i in range(n)]
    # Merge gaps now and then so `meets`, `starts` and `equals` occur.
    for i in range(1, n):
        if draw(st.booleans()) and out[i - 1][1] < out[i][0]:
            out[i] = (out[i - 1][1], out[i][1])
    return out


@st.composite
def cases(draw):
    """Tables of A, B, C in partitions 0 and 1, up to two constraints, maybe a window."""
    tables = {}
    for name in "ABC":
        rows = []
        for p in (0, 1):
            rows += [(p, *s) for s in spans(draw, draw(st.integers(1, 4)))]
        tables[name] = pd.DataFrame(rows, columns=["p", "ts", "te"]).astype("int64")
    chosen = draw(st.lists(st.sampled_from(CONSTRAINTS), min_size=1, max_size=2, unique=True))
    return tables, chosen, draw(st.sampled_from(["", "WITHIN 12", "WITHIN 25"]))


def _allen_inverse(name: str) -> str:
    return inverse(AllenRelation(name)).value


@st.composite
def constraint_text(draw, names):
    """One PATTERN group between two of ``names``: relations, an operator, followed_by,
    a disjunction holding followed_by/follows, or an endpoint restriction."""
    left, right = draw(st.permutations(names))[:2]
    kind = draw(st.sampled_from(["relations", "relations", "operator", "followed", "mixed",
                                 "ends"]))
    if kind == "relations":
        chosen = draw(st.lists(st.sampled_from([r.value for r in ALLEN_RELATIONS]),
                               min_size=1, max_size=7, unique=True))
        return f"{left} {'; '.join(chosen)} {right}"
    if kind == "operator":
        return f"{left} {draw(st.sampled_from([op.value for op in HierarchyOperator]))} {right}"
    if kind == "mixed":
        # followed_by / follows in a disjunction with other relations (SEMANTICS B2),
        # each term written either way round.
        words = draw(st.lists(st.sampled_from([r.value for r in ALLEN_RELATIONS]
                                              + ["followed_by", "follows"]),
                              min_size=2, max_size=4, unique=True))
        if not {"followed_by", "follows"} & set(words):
            words[0] = draw(st.sampled_from(["followed_by", "follows"]))
        terms = []
        for word in words:
            if draw(st.booleans()):
                terms.append(f"{left} {word} {right}")
            else:
                inverse = {"followed_by": "follows", "follows": "followed_by"}.get(word)
                terms.append(f"{right} {inverse or _allen_inverse(word)} {left}")
        return "; ".join(terms)
    if kind == "followed":
        return f"{left} {draw(st.sampled_from(['followed_by', 'follows', 'followed-by']))} {right}"
    ends = st.sampled_from(["ts", "te"])
    op = draw(st.sampled_from(["<", "<=", "=", ">=", ">"]))
    return f"{left}.{draw(ends)} {op} {right}.{draw(ends)}"


@st.composite
def pattern_parts(draw, max_symbols=4):
    """Symbol names, PATTERN text and WITHIN text of a random pattern."""
    names = list(SYMBOLS[:draw(st.integers(2, max_symbols))])
    groups = draw(st.lists(constraint_text(names), min_size=1, max_size=len(names)))
    within = draw(st.sampled_from(["", "", "WITHIN 0", "WITHIN 6", "WITHIN 15", "WITHIN 40",
                                   "WITHIN 12.5"]))
    return names, " AND ".join(groups), within


@st.composite
def interval_sets(draw, names, partitions=("p0", "p1", "p2")):
    """Interval events of ``names`` in string-keyed partitions, with a payload ``v``."""
    rows = []
    for name in names:
        for p in partitions:
            for ts, te in spans(draw, draw(st.integers(0, 6))):
                rows.append((p, name, ts, te, draw(st.integers(-5, 5))))
    frame = pd.DataFrame(rows, columns=["p", "symbol", "ts", "te", "v"])
    return frame.astype({"ts": "int64", "te": "int64", "v": "int64"})


CONDITIONS = ["x > 2", "x < 2", "x >= 1 AND x <= 3", "NOT x = 2", "x = 0 OR x = 4", "y > 0",
              "x > 1 AND NOT y > 0", "x != 3"]
DURATIONS = ["", "", "", "AT LEAST 2", "AT MOST 3", "DURATION BETWEEN 1 AND 4"]


@st.composite
def point_streams(draw, partitions=3, length=25):
    """Point events: per partition key ``k``, strictly increasing times, small ``x``, ``y``."""
    frames = []
    for k in range(draw(st.integers(1, partitions))):
        n = draw(st.integers(1, length))
        times = sorted(draw(st.lists(st.integers(0, 3 * length), min_size=n, max_size=n,
                                     unique=True)))
        frames.append(pd.DataFrame({
            "k": k, "time": times,
            "x": draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)),
            "y": draw(st.lists(st.integers(-1, 1), min_size=n, max_size=n))}))
    events = pd.concat(frames, ignore_index=True)
    return events.sample(frac=1.0, random_state=draw(st.integers(0, 9)))


@st.composite
def definitions(draw, names):
    """A DEFINE clause for ``names`` over columns x and y."""
    parts = []
    for name in names:
        parts.append(f"{name} AS {draw(st.sampled_from(CONDITIONS))} "
                     f"{draw(st.sampled_from(DURATIONS))}".rstrip())
    return "DEFINE " + ", ".join(parts)
