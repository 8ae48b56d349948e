"""Shards: an archive cut by time between the clusters of its groups (:mod:`.cuts`),
indexed shard by shard (:mod:`.pieces`), and shards read side by side as one index
(:mod:`.merge`). design.md, "Shards", states why the cut is exact."""

from uncertain_cep.index.shards.cuts import Clusters, find_clusters, plan_cuts, shard_of_rows
from uncertain_cep.index.shards.merge import ShardSearch, merge_indexes
from uncertain_cep.index.shards.pieces import index_shards

__all__ = ["Clusters", "ShardSearch", "find_clusters", "index_shards", "merge_indexes",
           "plan_cuts", "shard_of_rows"]
