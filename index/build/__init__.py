"""Room 1 of the index: building a group's forest (Zhou et al. 4.1-4.2).

Isolated subsequences (:mod:`~uncertain_cep.index.build.isolation`), OI-tree planning
(:mod:`~uncertain_cep.index.build.oi_tree`), forests with virtual nodes
(:mod:`~uncertain_cep.index.build.forest`, :mod:`~uncertain_cep.index.build.forest_builder`,
:mod:`~uncertain_cep.index.build.cluster_forest`), both code schemes
(:mod:`~uncertain_cep.index.build.codes`), outward rounding for R*-tree boxes, and forests as
Arrow tables (:mod:`~uncertain_cep.index.build.tables`), which both builders share.
"""
