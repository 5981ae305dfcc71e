"""The exception hierarchy: one root, a few meaningful subclasses."""

from __future__ import annotations


class LsmlakeError(Exception):
    """Root of every error lsmlake raises on purpose.

    ``published_snapshot_ids``: the snapshots a write had already published when it failed (empty when
    nothing landed, the default). A write whose APPEND snapshot is among them is committed: retrying
    it would apply it twice."""

    published_snapshot_ids: tuple[int, ...] = ()


class NoSuchDatabaseError(LsmlakeError):
    """A database that does not exist was named."""


class NoSuchTableError(LsmlakeError):
    """A table that does not exist was named."""


class AlreadyExistsError(LsmlakeError):
    """A database or table that already exists was created without exist_ok."""


class NoSuchSnapshotError(LsmlakeError):
    """A snapshot id that the table does not hold was asked for."""


class SchemaMismatchError(LsmlakeError):
    """Data handed to a writer does not fit the table schema."""


class InvalidOptionError(LsmlakeError, ValueError):
    """A table option is unknown, malformed, or in a combination Paimon rejects."""


class InvalidIdentifierError(LsmlakeError, ValueError):
    """A database or table name is empty, malformed, or escapes the warehouse."""


class InvalidPartitionSpecError(LsmlakeError, ValueError):
    """A partition spec names a column that is not a partition key, or data falls outside it."""


class CommitConflictError(LsmlakeError):
    """A commit conflicts with one that landed first, or gave up retrying; nothing was published (a
    write that fails after publishing a snapshot raises PartiallyPublishedError instead), so the write
    can be retried."""


class LockTimeoutError(CommitConflictError):
    """A catalog lock (the JDBC catalog's ``lock.enabled``) was not acquired within
    ``lock-acquire-timeout``; nothing was published, so the operation can be retried."""


class MetastoreError(LsmlakeError):
    """The catalog's metastore (the JDBC database) failed or cannot be reached; the message names it."""


class NotAuthorizedError(MetastoreError):
    """A REST catalog's server refused the request (HTTP 401: the credentials, HTTP 403: the
    permission); the message names the option that holds the credentials."""


class CommitStateUnknownError(LsmlakeError):
    """A commit whose outcome is unknown: the catalog's server (a REST catalog) may have published the
    snapshot, but the answer was lost (a timeout, a reset connection, an HTTP 5xx). Every file the
    commit wrote is kept, since a published snapshot may reference them (orphan-file cleaning removes
    them later if it did not land); read the table to see whether the commit landed before retrying."""


class NoSuchResourceError(MetastoreError):
    """A REST catalog's server has no such resource (HTTP 404) of a kind lsmlake has no error of its own
    for (a view, a function, a warehouse, ...); the message names it."""


class PartiallyPublishedError(LsmlakeError):
    """A write published some snapshots (its APPEND or OVERWRITE first), then failed with an error that
    is not an lsmlake one or that would read as "nothing published" (a commit conflict): the write is
    committed and must not be retried. ``published_snapshot_ids`` names the snapshots that landed; the
    original error is ``__cause__``. (Other lsmlake errors raised after a publish keep their type and
    carry ``published_snapshot_ids`` and a note.)"""

    def __init__(self, message: str, published_snapshot_ids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.published_snapshot_ids = published_snapshot_ids


class CorruptFileError(LsmlakeError):
    """A metadata or data file is truncated, malformed or fails its checksum."""


class UnsupportedError(LsmlakeError):
    """The table uses a feature lsmlake does not implement yet."""


class MissingFileError(CorruptFileError, FileNotFoundError):
    """A file the table's metadata references does not exist (deleted by hand, or lost).

    Also a ``FileNotFoundError``, so code that waits for a file to appear keeps working."""


class DurabilityError(LsmlakeError, OSError):
    """A file could not be written or made durable (its write or fsync failed); it names the file. A
    commit that needed the file publishes no snapshot."""


class NoSuchColumnError(LsmlakeError, ValueError):
    """A column the table does not have was named (in a filter, a projection or an update)."""


class InvalidFilterError(LsmlakeError, ValueError):
    """A filter cannot be parsed, uses a construct lsmlake cannot push down, or compares a column with
    a value it cannot hold."""


class ImmutableColumnError(LsmlakeError, ValueError):
    """An update would change a primary-key or partition column (they place a row; write it anew)."""


class NoSuchTagError(NoSuchSnapshotError):
    """A tag that the table does not hold was asked for."""


class SchemaChangeError(SchemaMismatchError, ValueError):
    """An ALTER that Paimon's rules refuse (unknown or duplicate column, protected key column, lossy
    type change, ...). Nothing was written."""


class SqlError(LsmlakeError, ValueError):
    """A statement that cannot be parsed, names something the SQL layer does not know, or misuses a clause."""


class RayWriteError(LsmlakeError):
    """A bucket writer on a Ray worker failed with an error that could not be sent back as itself."""
