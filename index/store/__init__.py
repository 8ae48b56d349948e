"""Room 3 of the index: the index on disk.

The layout's names (:mod:`~uncertain_cep.index.store.layout`); the writer
(:mod:`~uncertain_cep.index.store.storage`, through a draft swapped into place:
:mod:`~uncertain_cep.index.store.drafts`; a build task's part files:
:mod:`~uncertain_cep.index.store.partition_writer`; the R*-tree file and statistics:
:mod:`~uncertain_cep.index.store.rtree_and_statistics`); the manifest
(:mod:`~uncertain_cep.index.store.manifest`, its records and their field-by-field reading:
:mod:`~uncertain_cep.index.store.manifest_records`,
:mod:`~uncertain_cep.index.store.manifest_fields`; the format version:
:mod:`~uncertain_cep.index.store.format_version`) and the checksums
(:mod:`~uncertain_cep.index.store.checksums`, :mod:`~uncertain_cep.index.store.column_checks`);
the reader (:mod:`~uncertain_cep.index.store.reader`, after
:mod:`~uncertain_cep.index.store.manifest_check`, reopening across a rebuild:
:mod:`~uncertain_cep.index.store.rebuilds`, with the event and node columns it maps), and
the time-ordered tables a time slice reads in part
(:mod:`~uncertain_cep.index.store.time_order`, :mod:`~uncertain_cep.index.store.slice_reads`).
"""
