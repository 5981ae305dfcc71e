"""FileIO: the only code that touches storage, over local disk and pyarrow filesystems."""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, cast

import pyarrow as pa
import pyarrow.fs as pafs

from lsmlake.core.object_store import S3ConditionalPut, S3GetObject, S3Settings, boto3_available
from lsmlake.errors import LsmlakeError, MissingFileError


def _lazy_get_object(settings: S3Settings) -> Callable[[str], bytes]:
    """The one-request S3 read, its client created on first use."""
    holder: list[S3GetObject] = []

    def get(path: str) -> bytes:
        if not holder:
            holder.append(S3GetObject(settings))
        return holder[0](path)

    return get


def _lazy_conditional_put(settings: S3Settings) -> Callable[[str, bytes], bool]:
    """The S3 conditional put, created on first use (reads never need boto3)."""
    holder: list[S3ConditionalPut] = []

    def put(path: str, data: bytes) -> bool:
        if not holder:
            holder.append(S3ConditionalPut(settings))
        return holder[0](path, data)

    return put


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
    ) -> None:
        """``scheme``: the URI scheme of an object store (``s3``), whose filesystem paths omit it;
        ``get_object``: reads a whole file in one request, instead of the filesystem's stream."""
        self.fs = filesystem
        self.local = local
        self._conditional_put = conditional_put
        self._get_object = get_object
        self.scheme = scheme

    @staticmethod
    def for_uri(uri: str, options: Mapping[str, str] | None = None) -> tuple[FileIO, str]:
        """A FileIO and the filesystem-relative root for a warehouse path or URI.

        ``s3://bucket/prefix`` (or ``s3a://``) uses ``options`` (``s3.endpoint``, ``s3.access-key``,
        ``s3.secret-key``, ``s3.region``) or the usual AWS environment variables.
        """
        if "://" not in uri:
            return FileIO(pafs.LocalFileSystem(), local=True), os.path.abspath(uri)
        if uri.startswith("file://"):
            return FileIO(pafs.LocalFileSystem(), local=True), os.path.abspath(uri[len("file://") :])
        scheme, _, rest = uri.partition("://")
        if scheme in ("s3", "s3a"):
            settings = S3Settings.of(options or {})
            return FileIO(
                settings.filesystem(),
                local=False,
                conditional_put=_lazy_conditional_put(settings),
                scheme=scheme,
                get_object=_lazy_get_object(settings) if boto3_available() else None,
            ), rest.rstrip("/")
        fs, root = pafs.FileSystem.from_uri(uri)
        return FileIO(fs, local=False), root.rstrip("/")

    def uri(self, path: str) -> str:
        """A path as other tools open it: ``s3://bucket/key`` on S3 (the filesystem path lacks the
        scheme), the absolute path on local disk."""
        return f"{self.scheme}://{path}" if self.scheme else path

    # -- reading
    def exists(self, path: str) -> bool:
        info = self.fs.get_file_info(path)
        return bool(info.type != pafs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        return bool(self.fs.get_file_info(path).type == pafs.FileType.Directory)

    def missing(self, path: str, what: str = "file") -> MissingFileError:
        """The error for a file that does not exist, naming it as other tools open it."""
        return MissingFileError(f"{what} {self.uri(path)} does not exist")

    def read_bytes(self, path: str) -> bytes:
        """A whole file; MissingFileError (a FileNotFoundError) when it does not exist."""
        try:
            if self._get_object is not None:
                return self._get_object(path)
            with self.fs.open_input_stream(path) as f:
                return cast(bytes, f.read())
        except FileNotFoundError as e:
            raise self.missing(path) from e
        except OSError as e:
            if not self.exists(path):
                raise self.missing(path) from e
            raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A random-access file; MissingFileError when it does not exist."""
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError as e:
            raise self.missing(path) from e

    def file_size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise self.missing(path)
        return int(info.size or 0)

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty when it does not exist."""
        if not self.is_dir(path):
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=False))
        return [
            FileStatus(i.path, i.base_name, int(i.size or 0), i.type == pafs.FileType.Directory)
            for i in infos
        ]

    def walk_files(self, path: str) -> list[FileStatus]:
        """Every file below a directory, recursively."""
        if not self.is_dir(path):
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True))
        return [
            FileStatus(i.path, i.base_name, int(i.size or 0), False)
            for i in infos
            if i.type == pafs.FileType.File
        ]

    # -- writing
    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents (on an object store: a marker object per level)."""
        self.fs.create_dir(path, recursive=True)

    def make_parent_dirs(self, path: str) -> None:
        """Before writing the file ``path``: create its directory on local disk. An object store needs
        none (a key has no parent to exist), so no marker objects - a request per level - are made."""
        if self.local:
            self.fs.create_dir(os.path.dirname(path), recursive=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new file (overwriting); parent directories are created."""
        self.make_parent_dirs(path)
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    @contextlib.contextmanager
    def open_output(self, path: str) -> Iterator[BinaryIO]:
        self.make_parent_dirs(path)
        with self.fs.open_output_stream(path) as f:
            yield cast(BinaryIO, f)

    def overwrite_hint(self, path: str, text: str) -> None:
        """Replace a small hint file; readers tolerate it being stale or missing."""
        if self.local:
            tmp = self._temp_path(path)
            self.write_bytes(tmp, text.encode())
            os.replace(tmp, path)
        else:
            self.write_bytes(path, text.encode())

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; True if this call created it.

        Local disk: the bytes go to a temp file that is hard-linked to the target, which fails
        atomically when the target exists. Object stores: a conditional create (no overwrite).
        """
        self.make_parent_dirs(path)
        if self.local:
            tmp = self._temp_path(path)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                return False
            except OSError as e:
                if e.errno == errno.EEXIST:
                    return False
                raise
            finally:
                os.unlink(tmp)
        return self._object_store_create(path, data)

    def _object_store_create(self, path: str, data: bytes) -> bool:
        if self._conditional_put is not None:
            return self._conditional_put(path, data)
        # no conditional put for this filesystem: refuse rather than risk a lost commit
        raise LsmlakeError(
            f"create-only publish of {path} needs a conditional put, which this filesystem "
            f"({self.fs.type_name}) does not offer"
        )

    def delete_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)

    def delete_dir(self, path: str) -> None:
        if self.is_dir(path):
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
        self.fs.move(src, dst)

    @staticmethod
    def _temp_path(path: str) -> str:
        head, tail = os.path.split(path)
        return os.path.join(head, f".{tail}.{uuid.uuid4()}.tmp")
