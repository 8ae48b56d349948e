"""The query wing, in rooms by stage (bottom to top; tests/test_layers.py holds the order):

* ``language/``: query text to a bound pattern;
* ``engine/kernels/``: the compiled kernels;
* ``evaluation/``: what every path shares (the query bound to an index, chain
  probabilities, answers, counters, EXPLAIN);
* ``plan/``: estimates and the choosers that pick each partial tuple's next item;
* ``engine/``: the batch engine, which searches, negates and answers;
* ``baselines/``: the oracle, the tree traversal and the entry-by-entry engines;
* :mod:`~uncertain_cep.query.strategies`: the registry that names them.
"""

# This folder is the package uncertain_cep.query. Imported by its folder name (as by
# ``pytest --doctest-modules query/...``) its modules would load twice, and numba would
# cache kernels under a module name that later runs cannot import.
if __name__ != "uncertain_cep.query":
    raise ImportError(f"{__name__!r} is the folder of the package uncertain_cep.query: import "
                      "it under that name (doctests: pytest tests/test_doctests.py)")

# Before any kernel is defined: importing kernel_cache tells numba where the package's
# compiled kernels are kept.
from uncertain_cep.kernel_cache import install_kernel_cache as _install  # noqa: F401

# isort: split
from uncertain_cep.query.language.parse import parse_query
from uncertain_cep.query.language.patterns import (
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
