"""Room 2 of the query wing: the compiled kernels (numba), below everything they serve.

Every kernel takes the node table as one record,
:class:`~uncertain_cep.index.node_table.NodeArrays` (``NodeTable.arrays``), and what it
reads of a query as NamedTuples beside it, never as loose lists of arrays. By stage:

* chains of OI-tree nodes: the descendant check and chain factors
  (:mod:`~uncertain_cep.query.engine.kernels.chains`), each entry's candidates and their
  factors (:mod:`~uncertain_cep.query.engine.kernels.pairs`), extension of whole batches
  (:mod:`~uncertain_cep.query.engine.kernels.extension`);
* grouping and hash tables of rows (:mod:`~uncertain_cep.query.engine.kernels.grouping`);
* negation's weighted sums (:mod:`~uncertain_cep.query.engine.kernels.negation`), their memo
  (:mod:`~uncertain_cep.query.engine.kernels.memo`) and their folds into a tuple's
  programme (:mod:`~uncertain_cep.query.engine.kernels.negation_folds`, with the classes of
  nodes of :mod:`~uncertain_cep.query.engine.kernels.futures`);
* complete tuples' probabilities: one tuple's dynamic programme
  (:mod:`~uncertain_cep.query.engine.kernels.programme`, what it knows before its first
  layer in :mod:`~uncertain_cep.query.engine.kernels.tuple_columns`, its layers' hash
  tables in :mod:`~uncertain_cep.query.engine.kernels.class_layers`), run over batches
  (:mod:`~uncertain_cep.query.engine.kernels.tuples`);
* the instants they compute on (:mod:`~uncertain_cep.query.engine.kernels.instants`) and
  the lock around numba's threading layer (:mod:`~uncertain_cep.query.engine.kernels.core`).

Every kernel is compiled with ``cache=True``, into the cache of
:mod:`uncertain_cep.kernel_cache` (one per version of the kernels' sources, shared by every
checkout and process of a machine), when the package is built or installed
(:mod:`uncertain_cep.kernel_build`).
"""
