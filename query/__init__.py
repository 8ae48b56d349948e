"""Query language, planning strategies, exact evaluation and baselines."""

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
