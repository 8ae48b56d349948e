"""Values as people read them: numpy scalars as the plain Python values they hold.

Event ids and group keys come out of numpy arrays; messages, manifests and answer tables
show them as the user wrote them (``7``, not ``np.int64(7)``).

>>> import numpy as np
>>> plain(np.int64(7)), plain(np.str_("g1")), plain("g1")
(7, 'g1', 'g1')
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plain"]


def plain(x: Any) -> Any:
    """``x`` as a plain Python value when it is a numpy scalar, else ``x`` itself."""
    return x.item() if isinstance(x, np.generic) else x
