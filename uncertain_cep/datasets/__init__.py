"""Generators of sample archives (the files under ``datasets/`` are made by these)."""

from uncertain_cep.datasets.office_rfid import generate_office_rfid
from uncertain_cep.datasets.synthetic import disjoint_sequence, generate_synthetic
from uncertain_cep.datasets.uci import load_dodgers, load_icu, load_localization

__all__ = ["disjoint_sequence", "generate_office_rfid", "generate_synthetic", "load_dodgers",
           "load_icu", "load_localization"]
