"""A connected-car point stream: speed and acceleration per car per second.

TPStream's running example (its Listing 1, SEMANTICS C) looks for aggressive drivers: a
hard acceleration (``accel > 8``) that runs into a short stretch of high speed
(``speed > 70``), ended by hard braking (``accel < -9``). This generator makes such a
stream with a known share of those episodes among ordinary driving, fully vectorised so
that tens of millions of events take seconds.

Each car drives for ``seconds`` seconds. Its speed (km/h) follows a mean-reverting random
walk around a cruising speed of its own (a linear recursion, computed with
:func:`scipy.signal.lfilter` for all cars at once); ``accel`` is the change of speed per
second (km/h per s), so the two columns agree. With probability ``aggressive`` per car and
minute an episode starts: 5 to 8 seconds of hard acceleration, 2 to 12 seconds of holding,
3 to 6 seconds of hard braking.

Rows come sorted by (``car_id``, ``time``), as an archive partitioned by car holds them;
``interleave=True`` sorts them by (``time``, ``car_id``) instead, as a live feed would
deliver them.

>>> import numpy as np
>>> df = generate_connected_car(cars=3, seconds=600, seed=1)
>>> len(df), list(df.columns)
(1800, ['car_id', 'time', 'speed', 'accel'])
>>> bool(np.allclose(df.groupby("car_id").speed.diff().fillna(0), df.accel))
True
>>> bool(df.speed.between(0, 200).all())
True
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.signal import lfilter

__all__ = ["AGGRESSIVE_DRIVERS", "generate_connected_car"]

#: TPStream's Listing 1 as SEMANTICS C writes it: the query this stream is made for (pass
#: ``time_unit="1s"``: ``time`` counts seconds).
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

_MAX_SPEED = 200.0
# Per-second pull back to the cruising speed; 0.03 gives slow, car-like drifts.
_REVERSION = 0.03


def generate_connected_car(cars: int = 1000, seconds: int = 3600, *, aggressive: float = 0.1,
                           seed: int = 0, interleave: bool = False) -> pd.DataFrame:
    """Generate ``cars * seconds`` point events (one per car and second).

    Parameters
    ----------
    cars : int
        Number of cars (``car_id`` 0 .. cars-1).
    seconds : int
        Seconds each car reports (``time`` 0 .. seconds-1, integer seconds).
    aggressive : float
        Expected aggressive episodes per car and minute (0 for none).
    seed : int
        Seed of the random generator; the same arguments give the same stream.
    interleave : bool
        Sort rows by (time, car_id) instead of (car_id, time).

    Returns
    -------
    DataFrame
        ``car_id`` (int32), ``time`` (int64, seconds), ``speed`` (km/h) and ``accel``
        (km/h per second), float64.
    """
    if cars < 1 or seconds < 1:
        raise ValueError(f"cars and seconds must be positive, got {cars} and {seconds}")
    if not 0 <= aggressive <= 60:
        raise ValueError(f"aggressive (episodes per car and minute) must be in [0, 60], "
                         f"got {aggressive}")
    rng = np.random.default_rng(seed)
    cruise = rng.uniform(30, 65, size=(cars, 1))
    push = rng.normal(0, 1.0, size=(cars, seconds)) + _episodes(rng, cars, seconds, aggressive)
    # v[t] = (1 - k) v[t-1] + k cruise + push[t], per car: one linear filter along time.
    drive = push + _REVERSION * cruise
    drive[:, 0] += (1 - _REVERSION) * cruise[:, 0]
    speed = lfilter([1.0], [1.0, -(1 - _REVERSION)], drive, axis=1)
    speed = np.round(np.clip(speed, 0, _MAX_SPEED), 1)
    accel = np.empty_like(speed)
    accel[:, 0] = 0.0
    accel[:, 1:] = np.round(np.diff(speed, axis=1), 1)
    # Rounding both to 0.1 could make the difference drift; keep speed the running sum.
    speed = np.round(speed[:, :1] + np.cumsum(accel, axis=1), 1) + 0.0  # no -0.0
    car = np.repeat(np.arange(cars, dtype=np.int32), seconds)
    time = np.tile(np.arange(seconds, dtype=np.int64), cars)
    frame = pd.DataFrame({"car_id": car, "time": time, "speed": speed.ravel(),
                          "accel": accel.ravel()})
    if interleave:
        order = np.argsort(time, kind="stable")
        frame = frame.iloc[order].reset_index(drop=True)
    return frame


def _episodes(rng: np.random.Generator, cars: int, seconds: int,
              rate: float) -> np.ndarray:
    """Extra acceleration per car and second: hard acceleration, hold, hard braking."""
    extra = np.zeros((cars, seconds + 64))
    count = rng.poisson(rate * cars * seconds / 60)
    if count == 0:
        return extra[:, :seconds]
    car = rng.integers(0, cars, size=count)
    start = rng.integers(0, seconds, size=count)
    rise = rng.integers(5, 9, size=count)
    hold = rng.integers(2, 13, size=count)
    fall = rng.integers(3, 7, size=count)
    # Piecewise-constant pushes as differences, summed up along time once.
    steps = np.zeros_like(extra)
    gain, brake = rng.uniform(12, 16, size=count), rng.uniform(-20, -15, size=count)
    np.add.at(steps, (car, start), gain)
    np.add.at(steps, (car, start + rise), -gain)
    np.add.at(steps, (car, start + rise + hold), brake)
    np.add.at(steps, (car, start + rise + hold + fall), -brake)
    extra = np.cumsum(steps, axis=1)
    return extra[:, :seconds]
