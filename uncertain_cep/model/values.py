"""Values as people read them: numpy scalars as the plain Python values they hold.

Event ids and group keys come out of numpy arrays; messages, manifests and answer tables
show them as the user wrote them (``7``, not ``np.int64(7)``).

>>> import numpy as np
>>> plain(np.int64(7)), plain(np.str_("g1")), plain("g1")
(7, 'g1', 'g1')
>>> as_written(np.int64(7)), as_written(np.str_("g1"))
('7', "'g1'")
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_written", "plain"]


def plain(x: Any) -> Any:
    """``x`` as a plain Python value when it is a numpy scalar, else ``x`` itself."""
    return x.item() if isinstance(x, np.generic) else x


def as_written(value: Any) -> str:
    """An event id (or a value) as the user wrote it, for messages: the ``repr`` of its
    plain Python value (numpy scalars shown as plain Python values)."""
    return repr(value.item() if isinstance(value, np.generic) else value)
