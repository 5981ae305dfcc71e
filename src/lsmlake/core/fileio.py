"""FileIO: the only code that touches storage, over local disk and pyarrow filesystems."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, cast

import pyarrow as pa
import pyarrow.fs as pafs

from lsmlake.core.object_store import (
    CONDITIONAL_CREATE,
    S3ConditionalPut,
    S3DeleteObject,
    S3DeleteObjects,
    S3GetObject,
    S3HeadObject,
    S3Settings,
    boto3_available,
)
from lsmlake.errors import DurabilityError, MissingFileError, UnsupportedError


def _lazy_get_object(settings: S3Settings) -> Callable[[str], bytes]:
    """The one-request S3 read, its client created on first use."""
    holder: list[S3GetObject] = []

    def get(path: str) -> bytes:
        if not holder:
            holder.append(S3GetObject(settings))
        return holder[0](path)

    return get


def _lazy_delete_object(settings: S3Settings) -> Callable[[str], None]:
    """The one-request S3 delete, its client created on first use."""
    holder: list[S3DeleteObject] = []

    def delete(path: str) -> None:
        if not holder:
            holder.append(S3DeleteObject(settings))
        holder[0](path)

    return delete


def _lazy_delete_objects(settings: S3Settings) -> Callable[[str, list[str]], None]:
    """The batch S3 delete (one request per 1,000 keys), its client created on first use."""
    holder: list[S3DeleteObjects] = []

    def delete(bucket: str, keys: list[str]) -> None:
        if not holder:
            holder.append(S3DeleteObjects(settings))
        holder[0](bucket, keys)

    return delete


def _lazy_head_object(settings: S3Settings) -> Callable[[str], bool]:
    """The one-request S3 existence check of a file, its client created on first use."""
    holder: list[S3HeadObject] = []

    def head(path: str) -> bool:
        if not holder:
            holder.append(S3HeadObject(settings))
        return holder[0](path)

    return head


def _lazy_conditional_put(settings: S3Settings) -> Callable[[str, bytes], bool]:
    """The S3 conditional put, created on first use (reads never need boto3)."""
    holder: list[S3ConditionalPut] = []

    def put(path: str, data: bytes) -> bool:
        if not holder:
            holder.append(S3ConditionalPut(settings))
        return holder[0](path, data)

    return put


SMALL_FILE_BYTES = 8 * 1024 * 1024
"""An object-store file up to this size is read whole in one GET rather than opened for ranged reads
(a HEAD and a GET per range)."""


class RequestCounter:
    """Requests sent to an object store, by S3 operation (``HEAD``, ``GET``, ``LIST``, ``PUT``,
    ``DELETE``, ``COPY``); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, operation: str, n: int = 1) -> None:
        with self._lock:
            self._counts[operation] += n

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {op: n for op, n in sorted(self._counts.items()) if n}

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def __getstate__(self) -> dict[str, int]:
        """A copy sent to another process (a Ray worker) carries the counts, not the lock."""
        return self.counts()

    def __setstate__(self, counts: dict[str, int]) -> None:
        self._lock = threading.Lock()
        self._counts = Counter(counts)


@dataclass(frozen=True)
class FileStatus:
    """Name, full path and size of one listed file."""

    path: str
    name: str
    size: int
    is_dir: bool


class FileIO:
    """Byte-level access to one warehouse: local paths or any pyarrow filesystem URI."""

    def __init__(
        self,
        filesystem: pafs.FileSystem,
        *,
        local: bool,
        conditional_put: Callable[[str, bytes], bool] | None = None,
        scheme: str | None = None,
        get_object: Callable[[str], bytes] | None = None,
        delete_object: Callable[[str], None] | None = None,
        head_object: Callable[[str], bool] | None = None,
        delete_objects: Callable[[str, list[str]], None] | None = None,
    ) -> None:
        """``scheme``: the URI scheme of an object store (``s3``), whose filesystem paths omit it;
        ``get_object``: reads a whole file in one request, instead of the filesystem's stream;
        ``delete_object``: deletes a file in one request; ``head_object``: whether a file exists, in
        one request; ``delete_objects``: deletes up to 1,000 keys of one bucket in one request."""
        self.fs = filesystem
        self.local = local
        self._conditional_put = conditional_put
        self._get_object = get_object
        self._delete_object = delete_object
        self._head_object = head_object
        self._delete_objects = delete_objects
        self.scheme = scheme
        self.requests = RequestCounter()
        # set by a catalog with a lock (JDBC lock.enabled): held around every create-only publish of
        # the path's table; inside it a store without a conditional put publishes by check-then-write
        self.publish_lock: Callable[[str], contextlib.AbstractContextManager[None]] | None = None

    # -- request accounting (object stores; local disk sends none)
    def request_counts(self) -> dict[str, int]:
        """Requests this FileIO sent to its object store so far, by S3 operation (``HEAD``, ``GET``,
        ``LIST``, ``PUT``, ``DELETE``, ``COPY``); empty on local disk. A random-access read of a data
        file counts its open (one ``HEAD`` unless the size was given) and one ``GET``: pyarrow may
        split a large read into more ranged GETs than that."""
        return self.requests.counts()

    def reset_request_counts(self) -> None:
        self.requests.reset()

    @contextlib.contextmanager
    def counting_requests(self) -> Iterator[dict[str, int]]:
        """``with io.counting_requests() as counts:``; on exit ``counts`` holds the requests sent
        inside the block (by every thread using this FileIO), by operation."""
        before = self.requests.counts()
        counts: dict[str, int] = {}
        try:
            yield counts
        finally:
            after = self.requests.counts()
            counts.update({op: n - before.get(op, 0) for op, n in after.items() if n > before.get(op, 0)})

    def _count(self, operation: str, n: int = 1) -> None:
        if not self.local:
            self.requests.add(operation, n)

    def _file_info(self, path: str) -> pafs.FileInfo:
        """One path's status: a HEAD on an object store, and a LIST when it is not a file (pyarrow then
        asks whether it is a directory)."""
        info = self.fs.get_file_info(path)
        self._count("HEAD")
        if info.type != pafs.FileType.File:
            self._count("LIST")
        return info

    @staticmethod
    def for_uri(uri: str, options: Mapping[str, str] | None = None) -> tuple[FileIO, str]:
        """A FileIO and the filesystem-relative root for a warehouse path or URI.

        ``s3://bucket/prefix`` (or ``s3a://``) uses ``options`` (``s3.endpoint``, ``s3.access-key``,
        ``s3.secret-key``, ``s3.region``) or the usual AWS environment variables.
        """
        if "://" not in uri and not uri.startswith("file:/"):
            return FileIO(pafs.LocalFileSystem(), local=True), os.path.abspath(uri)
        if uri.startswith("file://"):
            return FileIO(pafs.LocalFileSystem(), local=True), os.path.abspath(uri[len("file://") :])
        if uri.startswith("file:/"):  # Java's Path.toString() of a local path: file:/tmp/x
            return FileIO(pafs.LocalFileSystem(), local=True), os.path.abspath(uri[len("file:") :])
        scheme, _, rest = uri.partition("://")
        if scheme in ("s3", "s3a"):
            settings = S3Settings.of(options or {})
            return FileIO(
                settings.filesystem(),
                local=False,
                conditional_put=_lazy_conditional_put(settings) if settings.conditional_create else None,
                scheme=scheme,
                get_object=_lazy_get_object(settings) if boto3_available() else None,
                delete_object=_lazy_delete_object(settings) if boto3_available() else None,
                head_object=_lazy_head_object(settings) if boto3_available() else None,
                delete_objects=_lazy_delete_objects(settings) if boto3_available() else None,
            ), rest.rstrip("/")
        fs, root = pafs.FileSystem.from_uri(uri)
        return FileIO(fs, local=False), root.rstrip("/")

    def uri(self, path: str) -> str:
        """A path as other tools open it: ``s3://bucket/key`` on S3 (the filesystem path lacks the
        scheme), the absolute path on local disk."""
        return f"{self.scheme}://{path}" if self.scheme else path

    # -- reading
    def exists(self, path: str) -> bool:
        """Whether a file or directory exists: on an object store a HEAD, and a LIST on a miss (a
        caller that will read the file anyway should read it and catch MissingFileError: one GET)."""
        return bool(self._file_info(path).type != pafs.FileType.NotFound)

    def is_file(self, path: str) -> bool:
        """Whether ``path`` is a file: on S3 one HEAD, also when it is missing (``exists`` then costs
        a LIST as well). Use it for files: snapshots, hints, tags."""
        if self._head_object is not None:
            self._count("HEAD")
            return self._head_object(path)
        return bool(self._file_info(path).type == pafs.FileType.File)

    def is_dir(self, path: str) -> bool:
        return bool(self._file_info(path).type == pafs.FileType.Directory)

    def missing(self, path: str, what: str = "file") -> MissingFileError:
        """The error for a file that does not exist, naming it as other tools open it."""
        return MissingFileError(f"{what} {self.uri(path)} does not exist")

    def read_bytes(self, path: str) -> bytes:
        """A whole file; MissingFileError (a FileNotFoundError) when it does not exist."""
        try:
            if self._get_object is not None:
                self._count("GET")
                return self._get_object(path)
            self._count("HEAD")
            self._count("GET")
            with self.fs.open_input_stream(path) as f:
                return cast(bytes, f.read())
        except FileNotFoundError as e:
            raise self.missing(path) from e

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        """A random-access file; MissingFileError when it does not exist. On an object store a HEAD
        (for the size) and the GETs of what is read (counted as one); a file whose ``size`` (from a
        manifest) is at most ``SMALL_FILE_BYTES`` is fetched whole in one GET instead."""
        if self.fetches_whole(size):
            return pa.BufferReader(self.read_bytes(path))
        self._count("HEAD")
        self._count("GET")
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError as e:
            raise self.missing(path) from e

    def fetches_whole(self, size: int | None) -> bool:
        """Whether ``open_input_file`` reads a file of this size whole, in one GET."""
        return size is not None and size <= SMALL_FILE_BYTES and self._get_object is not None

    def file_size(self, path: str) -> int:
        info = self._file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise self.missing(path)
        return int(info.size or 0)

    def modified_millis(self, path: str) -> int:
        """A file's modification time in epoch milliseconds."""
        info = self._file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise self.missing(path)
        return (info.mtime_ns or 0) // 1_000_000

    def _select(self, path: str, recursive: bool) -> list[pafs.FileInfo]:
        """The entries below a directory (none when it does not exist or is a file); one LIST on an
        object store (per 1000 keys)."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=recursive))
        except (NotADirectoryError, FileNotFoundError):
            infos = []
        except OSError:
            if self.local and os.path.isfile(path):
                infos = []
            else:
                raise
        self._count("LIST", max(1, -(-len(infos) // 1000)))
        return list(infos)

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty when it does not exist."""
        return [
            FileStatus(i.path, i.base_name, int(i.size or 0), i.type == pafs.FileType.Directory)
            for i in self._select(path, recursive=False)
        ]

    def walk_files(self, path: str) -> list[FileStatus]:
        """Every file below a directory, recursively."""
        infos = self._select(path, recursive=True)
        return [
            FileStatus(i.path, i.base_name, int(i.size or 0), False)
            for i in infos
            if i.type == pafs.FileType.File
        ]

    # -- writing
    # Durability on local disk: every file written here is fsynced before it is closed, and its
    # directory entry (and any directory created for it) fsynced too, so a file a snapshot references
    # survives a power loss once the snapshot is published. Hints are the exception (readers tolerate
    # a stale one). Object stores persist an object when its PUT is acknowledged.
    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents (on an object store: a marker object per level)."""
        if self.local:
            self._make_local_dirs(path)
        else:
            # pyarrow checks the levels (HEADs) and puts a marker for each; counted as a HEAD and a PUT
            # per level below the bucket, its upper bound
            levels = max(1, path.strip("/").count("/"))
            self._count("HEAD", levels)
            self._count("PUT", levels)
            self.fs.create_dir(path, recursive=True)

    def make_parent_dirs(self, path: str) -> None:
        """Before writing the file ``path``: create its directory on local disk. An object store needs
        none (a key has no parent to exist), so no marker objects - a request per level - are made."""
        if self.local:
            self._make_local_dirs(os.path.dirname(path))

    def _make_local_dirs(self, directory: str) -> None:
        """``os.makedirs``, then the entry of each directory it created made durable in its parent."""
        if os.path.isdir(directory):
            return
        created: list[str] = []
        d = directory
        while d and not os.path.isdir(d):
            created.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        os.makedirs(directory, exist_ok=True)
        for new_dir in reversed(created):
            self.sync_dir(os.path.dirname(new_dir))

    def sync_dir(self, path: str) -> None:
        """Make a local directory's entries (files created, linked or renamed in it) durable; a no-op
        on object stores, which have no directories."""
        if not self.local:
            return
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as e:
            raise _durability_error("open directory", path, e) from e
        try:
            os.fsync(fd)
        except OSError as e:
            raise _durability_error("fsync directory", path, e) from e
        finally:
            os.close(fd)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new file (overwriting); parent directories are created. On local disk it is durable
        (file and directory entry fsynced) when this returns."""
        self.make_parent_dirs(path)
        if self.local:
            _write_local(path, data, durable=True)
            self.sync_dir(os.path.dirname(path))
            return
        with self.fs.open_output_stream(path) as f:
            f.write(data)
        self._count_upload(len(data))

    def _count_upload(self, size: int) -> None:
        """The requests of one upload through pyarrow: a PUT up to one part (10 MiB), else a multipart
        upload (a POST to start it, a PUT per part, a POST to complete it)."""
        if size <= _UPLOAD_PART_SIZE:
            self._count("PUT")
        else:
            self._count("POST", 2)
            self._count("PUT", -(-size // _UPLOAD_PART_SIZE))

    def create_output(self, path: str) -> OutputFile:
        """A new file to stream into (parent directories are created); ``close()`` makes it durable."""
        self.make_parent_dirs(path)
        if self.local:
            try:
                stream: pa.NativeFile = pa.OSFile(path, "wb")
            except OSError as e:
                raise _durability_error("create", path, e) from e
            return OutputFile(self, path, stream, local=True)
        return OutputFile(self, path, self.fs.open_output_stream(path), local=False)

    @contextlib.contextmanager
    def open_output(self, path: str) -> Iterator[BinaryIO]:
        """``create_output`` as a context: closed (durably) on success, abandoned on an error."""
        out = self.create_output(path)
        try:
            yield cast(BinaryIO, out.stream)
        except BaseException:
            out.abort()
            raise
        out.close()

    def overwrite_hint(self, path: str, text: str) -> None:
        """Replace a small hint file; readers tolerate it being stale or missing (so no fsync)."""
        if self.local:
            self.make_parent_dirs(path)
            tmp = self._temp_path(path)
            _write_local(tmp, text.encode(), durable=False)
            os.replace(tmp, path)
        else:
            with self.fs.open_output_stream(path) as f:
                f.write(text.encode())
            self._count("PUT")

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; True if this call created it.

        Local disk: the bytes go to a temp file, fsynced, that is hard-linked to the target, which
        fails atomically when the target exists; then the directory is fsynced, so a True is durable
        (a failure of that last fsync only warns: the file is already visible). Object stores: a
        conditional create (no overwrite). With a ``publish_lock`` all of it runs under that lock.
        """
        if self.publish_lock is not None:
            with self.publish_lock(path):
                return self._create_only(path, data, locked=True)
        return self._create_only(path, data, locked=False)

    def _create_only(self, path: str, data: bytes, *, locked: bool) -> bool:
        self.make_parent_dirs(path)
        if not self.local:
            return self._object_store_create(path, data, locked=locked)
        tmp = self._temp_path(path)
        try:
            _write_local(tmp, data, durable=True, name=path)
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError as e:
                if e.errno == errno.EEXIST:
                    return False
                raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        try:
            self.sync_dir(os.path.dirname(path))
        except DurabilityError as e:
            # the file is visible (and its bytes durable): failing now would have a committer discard
            # files a published snapshot references, so report the lost guarantee instead
            warnings.warn(
                f"{path} is published, but its directory entry may not survive a power loss ({e})",
                stacklevel=2,
            )
        return True

    def _object_store_create(self, path: str, data: bytes, *, locked: bool = False) -> bool:
        if self._conditional_put is not None:
            self._count("PUT")
            return self._conditional_put(path, data)
        if locked:  # every create-only writer of this table holds the lock: check, then write
            if self.exists(path):
                return False
            # a filesystem without conditional puts may be hierarchical: it then needs the directory
            self.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            self.write_bytes(path, data)
            return True
        # no conditional put for this filesystem: refuse rather than risk a lost commit
        why = (
            f"{CONDITIONAL_CREATE}=false"
            if self.scheme in ("s3", "s3a")
            else f"this filesystem ({self.fs.type_name}) does not offer one"
        )
        raise UnsupportedError(
            f"cannot publish {self.uri(path)}: a create-only publish (snapshot, schema, tag) needs a "
            f"conditional put or a catalog lock, and there is neither ({why}); commit through a JDBC "
            "catalog (metastore=jdbc) with lock.enabled=true, which publishes under its lock"
        )

    def delete_file(self, path: str) -> None:
        """Delete a file; a missing one is no error. On S3 one DELETE."""
        if self._delete_object is not None:
            self._count("DELETE")
            self._delete_object(path)
            return
        if not self.local:
            self._count("HEAD")
            self._count("DELETE")
            self._count("PUT")  # pyarrow re-creates the parent's marker
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)

    def delete_files(self, paths: list[str]) -> None:
        """Delete files (missing ones are no error); on S3 one request per 1,000 files of a bucket."""
        if self._delete_objects is None or len(paths) < 2:
            for path in paths:
                self.delete_file(path)
            return
        by_bucket: dict[str, list[str]] = {}
        for path in dict.fromkeys(paths):
            bucket, _, key = path.partition("/")
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for i in range(0, len(keys), _DELETE_BATCH):
                self._count("POST")
                self._delete_objects(bucket, keys[i : i + _DELETE_BATCH])

    def delete_dir(self, path: str) -> None:
        """Delete a directory and everything below it; a missing one is no error."""
        if self.is_dir(path):
            # pyarrow lists the keys, deletes them in batches (a POST per 1000), then the marker
            self._count("HEAD")
            self._count("LIST")
            self._count("POST")
            self._count("DELETE")
            self._count("PUT")
            self.fs.delete_dir(path)

    def delete_empty_dir(self, path: str) -> bool:
        """Remove ``path`` if it is an empty directory, atomically (a file created in it meanwhile keeps
        it); True if it was removed. Object stores have no directories to remove: always False."""
        if not self.local:
            return False
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def rename(self, src: str, dst: str) -> None:
        """Move a file or directory; on local disk both directory entries are made durable. On an
        object store a copy and a delete (pyarrow also re-creates the source's parent marker)."""
        self._count("PUT", 2)
        self._count("DELETE")
        self.fs.move(src, dst)
        if self.local:
            self.sync_dir(os.path.dirname(dst))
            if os.path.dirname(src) != os.path.dirname(dst):
                self.sync_dir(os.path.dirname(src))

    @staticmethod
    def _temp_path(path: str) -> str:
        head, tail = os.path.split(path)
        return os.path.join(head, f".{tail}.{uuid.uuid4()}.tmp")


_UPLOAD_PART_SIZE = 10 * 1024 * 1024  # pyarrow's S3 multipart part size
_DELETE_BATCH = 1000  # keys per S3 DeleteObjects request


class OutputFile:
    """A new file being streamed into through ``stream``. ``close()`` makes it durable on local disk
    (fsync before close, then its directory entry); ``abort()`` just closes it (the caller deletes it)."""

    def __init__(self, io: FileIO, path: str, stream: pa.NativeFile, *, local: bool) -> None:
        self.io, self.path, self.stream, self._local = io, path, stream, local
        self.size: int | None = None
        """The bytes written, once closed."""

    def close(self) -> None:
        self.size = self.stream.tell()
        if not self._local:
            self.stream.close()
            self.io._count_upload(self.size)
            return
        try:
            self.stream.flush()
            os.fsync(self.stream.fileno())
        except OSError as e:
            with contextlib.suppress(OSError):
                self.stream.close()
            raise _durability_error("fsync", self.path, e) from e
        self.stream.close()
        self.io.sync_dir(os.path.dirname(self.path))

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.close()


def _durability_error(what: str, path: str, e: OSError) -> DurabilityError:
    err = DurabilityError(f"could not {what} {path}: {e.strerror or e}")
    err.errno = e.errno
    return err


def _write_local(path: str, data: bytes, *, durable: bool, name: str | None = None) -> None:
    """Write a local file whole; ``durable``: fsynced before it is closed. Errors name ``name`` (the
    file this one becomes) or ``path``."""
    step = "write"
    try:
        with open(path, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                step = "fsync"
                os.fsync(f.fileno())
    except OSError as e:
        raise _durability_error(step, name or path, e) from e
