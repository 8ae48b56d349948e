"""Room 3 of the index: the index on disk.

The writer (:mod:`~uncertain_cep.index.store.storage`), the manifest and its checksums
(:mod:`~uncertain_cep.index.store.manifest`, :mod:`~uncertain_cep.index.store.checksums`,
:mod:`~uncertain_cep.index.store.column_checks`), the reader
(:mod:`~uncertain_cep.index.store.reader`, with the event and node columns it maps), and the
time-ordered tables a time slice reads in part (:mod:`~uncertain_cep.index.store.time_order`,
:mod:`~uncertain_cep.index.store.slice_reads`).
"""
