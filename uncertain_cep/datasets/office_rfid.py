"""A small, realistic uncertain archive: people moving between office rooms under RFID.

Each person walks along a corridor of rooms and is read by the reader of the room they
are in. Readers have clock skew and a coarse granularity, so a reading's time is an
interval of 1-4 instants (seconds) around the true instant; a reader locates a tag only
to within a few metres of the reader, so the location is a box. One person's readings
form a dependency group: they cannot share an instant, and with ``max_speed`` (walking
speed) they cannot be far apart in space and close in time.

The true trajectory is a valid world, so every group has an order instance.
``weights="normal"`` or ``"list"`` also gives each reading weights on its instants
(SEMANTICS A6; :func:`~uncertain_cep.datasets.synthetic.instant_weight_columns`), drawn
after the rows from a generator of their own: the rows stay those of the same arguments.

>>> df = generate_office_rfid(people=2, readings_per_person=5, seed=1)
>>> list(df.columns)
['event_id', 'person', 't_lo', 't_hi', 'x_lo', 'x_hi', 'y_lo', 'y_hi', 'tag']
>>> len(df)
10
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from uncertain_cep.datasets.synthetic import instant_weight_columns

__all__ = ["ROOMS", "WALKING_SPEED", "generate_office_rfid"]

# Room name -> reader position (metres) along a corridor, two rows of rooms.
ROOMS = {f"Room 40{i + 1}": (10.0 * (i // 2), 8.0 * (i % 2)) for i in range(8)}
WALKING_SPEED = 2.0  # metres per instant (second): a brisk walk
READER_RANGE = 2.5   # metres around the reader


def generate_office_rfid(people: int = 12, readings_per_person: int = 40,
                         seed: int = 20141124, weights: str | None = None) -> pd.DataFrame:
    """Generate the office RFID archive; same arguments, same rows.

    >>> w = generate_office_rfid(people=2, readings_per_person=5, seed=1, weights="normal")
    >>> w.drop(columns=["t_mu", "t_sigma"]).equals(generate_office_rfid(2, 5, seed=1))
    True
    """
    rng = np.random.default_rng(seed)
    truths, lefts, widths = [], [], []
    names = list(ROOMS)
    rows = []
    for p in range(people):
        room = names[rng.integers(len(names))]
        t = int(rng.integers(0, 60))
        for k in range(readings_per_person):
            if k:
                nxt = room if rng.random() < 0.35 else _neighbour(rng, names, room)
                dist = float(np.hypot(*np.subtract(ROOMS[nxt], ROOMS[room])))
                # Walking time plus a stay, so the true trajectory respects the speed.
                t += int(np.ceil(dist / WALKING_SPEED)) + int(rng.integers(2, 20))
                room = nxt
            width = int(rng.integers(1, 5))
            left = int(rng.integers(0, width))
            truths.append(t)
            lefts.append(left)
            widths.append(width)
            cx, cy = ROOMS[room]
            rows.append({"event_id": f"p{p:02d}-{k:03d}", "person": f"person-{p:02d}",
                         "t_lo": t - left, "t_hi": t - left + width - 1,
                         "x_lo": cx - READER_RANGE, "x_hi": cx + READER_RANGE,
                         "y_lo": cy - READER_RANGE, "y_hi": cy + READER_RANGE,
                         "tag": room})
    frame = pd.DataFrame(rows)
    if weights is not None:
        drawn = instant_weight_columns(np.random.default_rng([seed, 6]), weights,
                                       np.array(truths, dtype=np.int64),
                                       np.array(lefts, dtype=np.int64),
                                       np.array(widths, dtype=np.int64))
        frame = frame.assign(**drawn)
    return frame


def _neighbour(rng: np.random.Generator, names: list[str], room: str) -> str:
    i = names.index(room)
    options = [j for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < len(names)]
    return names[options[rng.integers(len(options))]]
