"""``CALL sys.remove_unexisting_files``: the latest snapshot's data files that no longer exist on storage,
removed from the table's manifests in one OVERWRITE snapshot, as Paimon's RemoveUnexistingFiles commits
them (the deleted files of a data increment)."""

from __future__ import annotations

from lsmlake.commit.publish import publish_removals
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.table_handle import TableHandle


def remove_unexisting_files(table: TableHandle, *, dry_run: bool = False) -> list[str]:
    """The paths of the live data files (every level) that are missing on storage, sorted; unless
    ``dry_run``, they are dropped from the manifests (DELETE entries in one OVERWRITE snapshot) so reads
    stop failing on them. The rows they held are gone: nothing can bring them back."""
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return []
    restored = RestoredState.load(table.io, table.paths, snapshot)
    locator = FileLocator(table)
    messages, paths = [], []
    for (partition, bucket), entries in restored.files.items():
        missing = []
        for e in entries:
            path = locator.data_file(partition, bucket, e.file)
            if not table.io.exists(path):
                missing.append(e.file)
                paths.append(path)
        if missing:
            total = entries[0].total_buckets
            messages.append(CommitMessage(partition, bucket, total, compact_before=tuple(missing)))
    if messages and not dry_run:
        publish_removals(table, messages)
    return sorted(paths)
