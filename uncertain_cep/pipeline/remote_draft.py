"""A Spark build writing to object storage (``s3://``, ``gs://``, ``abfs://``,
``hdfs://``): the executors upload, the driver publishes.

The build writes a new *version* of the remote index
(:class:`~uncertain_cep.index.store.remote.VersionUpload`), which no reader sees until its
pointer is replaced, last:

1. Each group task writes its pieces into a scratch directory of its own host, as it
   would into a shared draft, and uploads them under the version's ``_work/`` once they
   are committed (:func:`build_and_upload`). The object names are the task's partition,
   so a retried task replaces what a killed attempt uploaded.
2. Each shard task downloads its shard's pieces from ``_work/`` into scratch, finishes
   the shard there (columns, R*-tree, statistics, manifest) and uploads the files its
   manifest lists, the manifest last (:func:`finish_folder`). A retried one does it
   again, from the same pieces.
3. The driver downloads only what the index's own manifest is made of (the shards'
   manifests and statistics, the rejected rows and groups), writes that manifest,
   uploads it, and replaces the pointer (:func:`publish_sharded`); ``_work/`` is then
   deleted. A driver killed before that leaves the old index current and the upload
   unnamed, deleted by the next save.

No step shares a filesystem with another: on a cluster, every executor needs only
credentials for the store.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.store.drafts import IndexDraft, write_rejected_rows
from uncertain_cep.index.store.layout import (
    CATEGORY_STATS,
    CELL_STATS,
    MANIFEST,
    REJECTED_GROUPS,
    REJECTED_ROWS,
    SHARDS,
    TIME_STATS,
    WORK,
)
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.manifest_records import ShardRecord
from uncertain_cep.index.store.remote import VersionUpload
from uncertain_cep.index.store.sharded import finish_sharded
from uncertain_cep.index.store.storage import write_index_tables
from uncertain_cep.pipeline.group_builder import GroupJob, build_partition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["build_and_upload", "finish_folder", "publish_sharded", "upload_empty",
           "upload_rejected_rows"]


def build_and_upload(job: GroupJob, upload: VersionUpload, partition: int, attempt: int,
                     batches: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """:func:`~uncertain_cep.pipeline.group_builder.build_partition` into a scratch
    directory, whose files are then uploaded under the version's ``_work/``."""
    with _scratch() as scratch:
        summary = build_partition(replace(job, draft=str(scratch)), partition, attempt,
                                  batches)
        upload.put_folder(scratch, WORK)
    return summary


def finish_folder(upload: VersionUpload, folder: str,
                  finish: Callable[[Path], Manifest]) -> Manifest:
    """Finish ``folder`` of the version (a shard, or ``""``: the one directory) in a
    task: its pieces downloaded from ``_work/``, ``finish(directory)`` run on them, and
    the files its manifest lists uploaded, the manifest last."""
    with _scratch() as scratch:
        upload.get_folder(f"{WORK}/{folder}".rstrip("/"), scratch)
        manifest = finish(scratch)
        upload.put_folder(scratch, folder, [name for name, _ in manifest.checksums]
                          + [MANIFEST])
    return manifest


def upload_empty(index: EventIndex, upload: VersionUpload) -> None:
    """The tables of an empty index, as group tasks would have left them."""
    with _scratch() as scratch:
        write_index_tables(index, scratch)
        upload.put_folder(scratch, WORK)


def upload_rejected_rows(rows: DataFrame, upload: VersionUpload, name: str) -> None:
    """Write ``rows`` (columns of the rejected-rows table) as one Parquet file
    ``rejected_rows/<name>-00000.parquet`` under ``_work/``, from a task."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        with _scratch() as scratch:
            upload.put_folder(scratch, WORK, [write_rejected_rows(batches, scratch, name)])
        yield pd.DataFrame({"done": [1]})

    rows.coalesce(1).mapInPandas(run, "done int").collect()


def publish_sharded(upload: VersionUpload, draft: IndexDraft, shards: list[ShardRecord],
                    manifests: list[Manifest], **settings: Any) -> Manifest:
    """Write the index's manifest over its uploaded shards and publish the version.

    ``draft`` is a local one of the driver's: into it go what the manifest is made of
    (each shard's manifest and statistics, the rejected rows and groups the tasks
    uploaded); :func:`~uncertain_cep.index.store.sharded.finish_sharded` completes it,
    and its files outside the shards are uploaded before the pointer is replaced.
    ``settings`` are :func:`finish_sharded`'s."""
    for table in (REJECTED_ROWS, REJECTED_GROUPS):
        upload.get_folder(f"{WORK}/{table}", draft.path / table)
    for shard in shards:
        upload.get_folder(shard.path, draft.path / shard.path,
                          [MANIFEST, TIME_STATS, CELL_STATS, CATEGORY_STATS])
    manifest = finish_sharded(draft, shards, manifests, **settings)
    upload.put_folder(draft.target, "", [name for name, _ in manifest.checksums
                                         if not _of_a_shard(name)] + [MANIFEST])
    upload.publish()
    return manifest


def _of_a_shard(name: str) -> bool:
    """A file a shard's task uploaded (all of a shard's, its manifest included)."""
    return name.split("/", 1)[0] == SHARDS


@contextmanager
def _scratch() -> Iterator[Path]:
    """A private scratch directory on this host, deleted on leaving."""
    with tempfile.TemporaryDirectory(prefix="uncertain-cep-task-") as folder:
        yield Path(folder)
