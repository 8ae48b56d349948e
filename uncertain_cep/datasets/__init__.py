"""Generators of sample archives (the files under ``datasets/`` are made by these)."""

from uncertain_cep.datasets.office_rfid import generate_office_rfid

__all__ = ["generate_office_rfid"]
