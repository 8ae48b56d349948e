"""Which on-disk format this version of uncertain-cep writes and reads: its name and version.

Both are the first fields of ``manifest.json``
(:class:`~uncertain_cep.index.store.manifest.Manifest`); an index of another format or
version is refused when opened, with the advice to rebuild it. The comments below say what
each version changed.

>>> FORMAT, FORMAT_VERSION
('uncertain-cep index', 12)
"""

from __future__ import annotations

__all__ = ["FORMAT", "FORMAT_VERSION"]

FORMAT = "uncertain-cep index"
# 5: the time axis (time unit, and for datetimes one instant's length and the time zone)
# replaced the time unit's text; a version-4 index cannot say whether its times were
# datetimes, so it would answer them as integers.
# 6: the events table's numbers are stored again as memory-mapped columns
# (event_columns/), which opening maps instead of reading the events table.
# 7: the tables are in time order and the nodes table has each node's interval
# (node_lo, node_hi), which time slices filter on; a version-6 slice would read whole
# top trees.
# 8: every file's checksum is an xxh3_64 (field "xxh3_64", was "sha256"), fast enough to
# check the memory-mapped columns on every open; a version-7 index left them unchecked.
# 9: an index may be sharded: its manifest lists shards (directories of this layout, each
# with its own manifest, holding group pieces), read side by side; a version-8 reader
# would take a sharded index's manifest for a damaged one.
# 10: compact: the node table and the R*-tree are stored once, packed (packed/), and the
# columns a query maps are a working copy made on each host (a local cache); the nodes and
# trees tables and the mapped columns are no longer stored. A version-9 reader would find
# no node table.
# 11: the R*-tree is stored as one tree per chunk of consecutive event rows (the
# manifest's rtree.chunk_entries; files rtree-1.dat, ...); a version-10 reader would
# search the first chunk only and miss the other events.
# 12: the R*-tree's files are stored as libspatialindex reads them (rtree.dat, rtree.idx,
# ... beside the manifest), no longer compressed in packed/: a host's working copy links
# them instead of holding a second, decompressed copy (100M events: 12 GB less on every
# host that queries). A version-11 reader would find no R*-tree.
FORMAT_VERSION = 12
