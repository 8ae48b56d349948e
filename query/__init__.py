"""Query language, planning strategies, exact evaluation and baselines."""

# This folder is the package uncertain_cep.query. Imported by its folder name (as by
# ``pytest --doctest-modules query/...``) its modules would load twice, and numba would
# cache kernels under a module name that later runs cannot import.
if __name__ != "uncertain_cep.query":
    raise ImportError(f"{__name__!r} is the folder of the package uncertain_cep.query: import "
                      "it under that name (doctests: pytest tests/test_doctests.py)")

from uncertain_cep.query.language import parse_query
from uncertain_cep.query.patterns import (
                            Between,
                            Comparison,
                            InSet,
                            PatternItem,
                            SequencePattern,
                            Symbol,
)

__all__ = [
                            "Between",
                            "Comparison",
                            "InSet",
                            "PatternItem",
                            "SequencePattern",
                            "Symbol",
                            "parse_query",
]
