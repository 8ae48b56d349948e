"""The bundled sample archive (``office_rfid.parquet``, see README.md beside it), installed
as the data package ``uncertain_cep.sample`` so that ``uncertain-cep demo`` finds it in a
wheel as in a checkout: ``importlib.resources.files("uncertain_cep.sample")``."""

__all__: list[str] = []
