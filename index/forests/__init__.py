"""Room 1 of the index: building a group's forest (Zhou et al. 4.1-4.2).

Isolated subsequences (:mod:`~uncertain_cep.index.forests.isolation`), the expansion of a
state (:mod:`~uncertain_cep.index.forests.expansion`) that the node budget's count
(:mod:`~uncertain_cep.index.forests.node_count`) and OI-tree planning
(:mod:`~uncertain_cep.index.forests.oi_tree`) share, forests with virtual nodes
(:mod:`~uncertain_cep.index.forests.forest`, :mod:`~uncertain_cep.index.forests.forest_builder`,
:mod:`~uncertain_cep.index.forests.cluster_forest`), both code schemes
(:mod:`~uncertain_cep.index.forests.codes`), outward rounding for R*-tree boxes, and forests as
Arrow tables (:mod:`~uncertain_cep.index.forests.tables`), which both builders share.
"""
