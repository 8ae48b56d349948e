"""Optional dependencies: what needs them says so, with the extra to install.

matplotlib (with fontTools and Pillow, about 90 MB) serves only plots and HTML reports, so
it is the ``plot`` extra (``pip install 'uncertain-cep[plot]'``), not a dependency of
every install; the README's setup installs it.

>>> require_matplotlib("res.plot()").__name__
'matplotlib'
"""

from __future__ import annotations

from types import ModuleType

from uncertain_cep.errors import MissingDependencyError

__all__ = ["require_matplotlib"]


def require_matplotlib(what: str) -> ModuleType:
    """matplotlib, or an error saying ``what`` needs it and how to install it."""
    try:
        import matplotlib
    except ImportError as e:
        raise MissingDependencyError(
            f"{what} draws with matplotlib, an optional dependency that is not installed: "
            "pip install 'uncertain-cep[plot]' (or pip install matplotlib)") from e
    return matplotlib
