"""HTTP for the REST catalog: JSON requests to Paimon's REST catalog API, and HTTP errors as lsmlake errors."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsmlake.errors import (
    AlreadyExistsError,
    CommitStateUnknownError,
    LsmlakeError,
    MetastoreError,
    NoSuchColumnError,
    NoSuchDatabaseError,
    NoSuchResourceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchTagError,
    NotAuthorizedError,
    UnsupportedError,
)
from lsmlake.metastore.rest_http import ConnectionPool

if TYPE_CHECKING:
    from lsmlake.metastore.rest_dlf import DlfSigner

TIMEOUT_S = 60.0
_NOT_FOUND: dict[str, type[LsmlakeError]] = {
    "DATABASE": NoSuchDatabaseError,
    "TABLE": NoSuchTableError,
    "COLUMN": NoSuchColumnError,
    "SNAPSHOT": NoSuchSnapshotError,
    "TAG": NoSuchTagError,
    "BRANCH": NoSuchTableError,  # lsmlake opens a branch as a table (db.t$branch_b)
}
# resources that belong to a table: a 404 for one names the table asked about too
_OF_TABLE = ("column", "snapshot", "tag", "branch", "partition")


def encode(segment: str) -> str:
    """A path segment or query value as Paimon's RESTUtil.encodeString spells it (Java's URLEncoder)."""
    return urllib.parse.quote_plus(segment, safe="")


@dataclass(frozen=True, repr=False)
class RestClient:
    """Requests to one REST catalog server (``uri``) with fixed headers (auth and ``header.*``), each
    signed by ``signer`` when given (DLF). GETs reuse kept-alive connections (``pool``); other requests
    open their own. Plain data: a table's commit environment carries it to other processes."""

    uri: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = TIMEOUT_S
    signer: DlfSigner | None = None
    pool: ConnectionPool = field(default_factory=ConnectionPool, compare=False, hash=False)

    def __repr__(self) -> str:  # header values carry credentials: names only
        names = ", ".join(name for name, _ in self.headers)
        signed = f", signer={self.signer!r}" if self.signer is not None else ""
        return f"RestClient({self.uri!r}, headers=[{names}] (values hidden), timeout={self.timeout}{signed})"

    def with_headers(self, headers: Mapping[str, str]) -> RestClient:
        merged = dict(self.headers)
        merged.update(headers)
        return RestClient(self.uri, tuple(sorted(merged.items())), self.timeout, self.signer, self.pool)

    def get(self, path: str, query: Mapping[str, str] | None = None, *, what: str = "") -> Any:
        return self.request("GET", path, query=query, what=what)

    def post(self, path: str, body: Any, *, what: str = "", commit: bool = False) -> Any:
        return self.request("POST", path, body=body, what=what, commit=commit)

    def delete(self, path: str, *, what: str = "") -> Any:
        return self.request("DELETE", path, what=what)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        what: str = "",
        commit: bool = False,
    ) -> Any:
        """Send one request; the response's JSON (None when it has no body). ``what`` names the object
        asked for (``table db.t``) in the error raised for a 404 without a resource type. ``commit``: the
        request publishes a snapshot, so a lost answer (a transport error, an HTTP 5xx, a body that is
        not JSON) raises CommitStateUnknownError: the server may have published it."""
        url = self.uri.rstrip("/") + path
        if query:
            url += "?" + "&".join(f"{encode(k)}={encode(v)}" for k, v in query.items())
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.signer is not None:  # signs the path as sent, the query unencoded, the body's exact text
            headers.update(
                self.signer.headers(method, path, query, None if data is None else data.decode("utf-8"))
            )
        try:
            status, text = self._send(method, url, data, headers)
        except urllib.error.HTTPError as e:
            status, text = e.code, _body(e)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if commit:
                raise unknown_commit(
                    what, f"no answer from {self.uri}: {type(reason).__name__}: {reason}"
                ) from None
            raise MetastoreError(
                f"REST catalog at {self.uri} (catalog option 'uri') cannot be reached: {method} {path}: {reason}"
            ) from None
        if status >= 400:
            error = http_error(status, text, method, path, what)
            if commit and status >= 500:
                raise unknown_commit(what, f"{error}") from None
            raise error
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            why = f"{method} {path} answered with text that is not JSON: {text[:200]!r}"
            if commit:
                raise unknown_commit(what, why) from None
            raise MetastoreError(f"REST catalog at {self.uri}: {why}") from None

    def _send(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, str]:
        """The status and body text of one request: a GET on a kept-alive connection of the pool (when
        no proxy applies), else through urllib (HTTPError for an error status)."""
        if method == "GET" and self.pool.usable(url):
            status, text = self.pool.get(url, headers, self.timeout)
            if not 300 <= status < 400:
                return status, text  # a redirect: urllib follows it below
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=self.timeout) as response:
            return int(response.status), response.read().decode("utf-8")


def _body(e: urllib.error.HTTPError) -> str:
    try:
        return e.read().decode("utf-8", "replace")
    except OSError:  # the connection broke while the error body was read
        return ""


def unknown_commit(what: str, why: str) -> CommitStateUnknownError:
    """The error for a commit request whose answer was lost (``why``)."""
    return CommitStateUnknownError(
        f"{what or 'a table'}: the REST catalog may or may not have published the commit ({why}); every "
        "file the commit wrote was kept (orphan-file cleaning removes them if it did not land): read the "
        "table's latest snapshot before retrying"
    )


def http_error(status: int, text: str, method: str, path: str, what: str) -> LsmlakeError:
    """The lsmlake error for an HTTP error answer (Paimon's ErrorResponse: resourceType, resourceName,
    message, code)."""
    try:
        body = json.loads(text) if text.strip() else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or text.strip() or f"HTTP {status}")
    resource = str(body.get("resourceType") or "").upper()
    request = f"{method} {path}"
    if status == 401:
        return NotAuthorizedError(
            f"REST catalog refused the credentials (HTTP 401) for {request}: check the catalog options "
            f"'token' and 'token.provider' (for DLF the 'dlf.*' key){f' ({message})' if body else ''}"
        )
    if status == 403:
        return NotAuthorizedError(
            f"REST catalog: no permission (HTTP 403) for {request}: {message} (the catalog option "
            "'token' names who asks)"
        )
    if status == 404:
        # without a resourceType, the object asked for (``what``: "table db.t") says what is missing
        kind = resource.lower() or (what.split(" ", 1)[0] if what else "")
        error = _NOT_FOUND.get(kind.upper(), NoSuchResourceError)
        name = body.get("resourceName")
        if what.startswith(kind + " "):
            subject = what
        elif name:
            subject = f"{kind or 'resource'} {name}"
            if kind in _OF_TABLE and what.startswith("table "):
                subject += f" of {what}"
        else:
            subject = f"the {kind or 'resource'} of {request}"
        return error(f"{subject} does not exist (REST catalog, HTTP 404: {message})")
    if status == 409:
        kind = resource.lower()
        name = body.get("resourceName")
        subject = what if what.startswith(kind + " ") or not name else f"{kind} {name}"
        return AlreadyExistsError(f"{subject or request} already exists (REST catalog, HTTP 409: {message})")
    if status == 501:
        return UnsupportedError(f"REST catalog does not support {request} (HTTP 501): {message}")
    if status == 400:
        return MetastoreError(f"REST catalog refused {request} as a bad request (HTTP 400): {message}")
    return MetastoreError(f"REST catalog failed {request} (HTTP {status}): {message}")
