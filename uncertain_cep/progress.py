"""Progress bars for long builds and queries: on a terminal or in a notebook only.

A bar appears once the work has run about a second (``delay``), so quick calls print
nothing. Where it goes depends on where the user is:

* in a Jupyter kernel (stderr is no terminal there), tqdm's notebook widget when
  ``ipywidgets`` is installed (the notebook extra), else tqdm's text bar in the cell;
* on a terminal, tqdm's text bar on stderr;
* anywhere else (a pipe, a log file, CI, a Spark task), nothing.

>>> bar = progress_bar("query", " entries")   # not a terminal here: no bar
>>> bar.disable
True
>>> bar.update(5); bar.close()
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["DELAY", "in_notebook", "progress_bar"]

# Seconds of work before a bar shows.
DELAY = 1.0


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (an IPython shell with a kernel)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:  # an IPython too old or half imported: no notebook to show in
        return False
    return ip is not None and getattr(ip, "kernel", None) is not None


def progress_bar(desc: str, unit: str, *, disable: bool = False, **options: Any) -> Any:
    """A tqdm bar for ``desc``, counting ``unit`` (``options`` go to tqdm); disabled
    where nobody watches, or when ``disable``."""
    from tqdm.std import tqdm as text_bar

    if not disable and in_notebook():
        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.notebook import tqdm as notebook_bar

            return notebook_bar(desc=desc, unit=unit, delay=DELAY, leave=False, **options)
        return text_bar(desc=desc, unit=unit, delay=DELAY, leave=False, file=sys.stderr,
                        **options)
    watched = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return text_bar(desc=desc, unit=unit, delay=DELAY, leave=False,
                    disable=disable or not watched, **options)
