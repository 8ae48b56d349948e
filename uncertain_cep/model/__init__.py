"""The data model: uncertain events, attribute pdfs and Condition 2 (no Spark here)."""

from uncertain_cep.model.attributes import NumericAttribute
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
from uncertain_cep.model.probability import interval_mass

__all__ = [
           "Archive",
           "MaxSpeed",
           "NumericAttribute",
           "PairPredicate",
           "interval_mass",
           "read_archive",
]
