"""Table maintenance: snapshot expiration, tags, rollback and orphan file cleaning."""

from __future__ import annotations

from lsmlake.errors import NoSuchTagError
from lsmlake.maintenance.cleanup import RollbackResult, delete_tag, rollback_to
from lsmlake.maintenance.expire import ExpireResult, expire_snapshots
from lsmlake.maintenance.orphans import remove_orphan_files
from lsmlake.maintenance.planning import FileSets
from lsmlake.metadata.consumers import read_consumers
from lsmlake.metadata.tags import Tag, create_tag, list_tags, tag_snapshot

__all__ = [
    "ExpireResult",
    "FileSets",
    "NoSuchTagError",
    "RollbackResult",
    "Tag",
    "create_tag",
    "delete_tag",
    "expire_snapshots",
    "list_tags",
    "read_consumers",
    "remove_orphan_files",
    "rollback_to",
    "tag_snapshot",
]
