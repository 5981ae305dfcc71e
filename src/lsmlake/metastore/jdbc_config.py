"""The JDBC catalog's options (Paimon's names and defaults), checked into one config."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from lsmlake.catalog_options import JDBC_PREFIX
from lsmlake.core.options import parse_duration_ms
from lsmlake.errors import InvalidOptionError, UnsupportedError

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
DEFAULT_CATALOG_KEY = "jdbc"
DEFAULT_ACQUIRE_TIMEOUT = "8 min"  # Paimon's lock-acquire-timeout
DEFAULT_CHECK_MAX_SLEEP = "8 s"  # Paimon's lock-check-max-sleep
DEFAULT_LOCK_KEY_MAX_LENGTH = 255
# the PostgreSQL JDBC driver's properties lsmlake can pass to libpq, by their libpq names
_PG_PROPERTIES = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "connectTimeout": "connect_timeout",
    "ApplicationName": "application_name",
    "applicationName": "application_name",
}
# sqlite-jdbc ignores credentials; nothing else is passed on
_SQLITE_PROPERTIES = ("user", "password")


@dataclass(frozen=True)
class JdbcConfig:
    """``uri`` as given; ``kind`` sqlite or postgresql; ``connect`` the driver's arguments."""

    uri: str = field(repr=False)  # may carry ?password=...: see ``display``
    kind: str
    connect: dict[str, str] = field(repr=False)
    catalog_key: str = DEFAULT_CATALOG_KEY
    lock_enabled: bool | None = None
    acquire_timeout_ms: int = 8 * 60_000
    check_max_sleep_ms: int = 8_000
    lock_key_max_length: int = DEFAULT_LOCK_KEY_MAX_LENGTH
    sync_all_properties: bool = True

    @property
    def display(self) -> str:
        """The URI without credentials, for messages."""
        return self.uri.split("?", 1)[0]

    @staticmethod
    def of(options: Mapping[str, str]) -> JdbcConfig:
        uri = options.get("uri")
        if not uri:
            raise InvalidOptionError(
                "the JDBC catalog needs the catalog option 'uri' (jdbc:sqlite:<file> or "
                "jdbc:postgresql://<host>:<port>/<database>)"
            )
        props = {k[len(JDBC_PREFIX) :]: v for k, v in options.items() if k.startswith(JDBC_PREFIX)}
        kind, connect = _parse_uri(uri, props)
        key = options.get("catalog-key", DEFAULT_CATALOG_KEY)
        if not key.strip():
            raise InvalidOptionError("catalog option 'catalog-key' must not be empty")
        max_len = options.get("lock-key-max-length", str(DEFAULT_LOCK_KEY_MAX_LENGTH))
        if not max_len.strip().isdigit() or int(max_len) < 1:
            raise InvalidOptionError(
                f"catalog option 'lock-key-max-length': {max_len!r} is not a positive integer"
            )
        return JdbcConfig(
            uri=uri,
            kind=kind,
            connect=connect,
            catalog_key=key,
            lock_enabled=_bool(options, "lock.enabled", None),
            acquire_timeout_ms=parse_duration_ms(
                "lock-acquire-timeout", options.get("lock-acquire-timeout", DEFAULT_ACQUIRE_TIMEOUT)
            ),
            check_max_sleep_ms=parse_duration_ms(
                "lock-check-max-sleep", options.get("lock-check-max-sleep", DEFAULT_CHECK_MAX_SLEEP)
            ),
            lock_key_max_length=int(max_len),
            sync_all_properties=bool(_bool(options, "sync-all-properties", True)),
        )


def _bool(options: Mapping[str, str], key: str, default: bool | None) -> bool | None:
    text = options.get(key)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"catalog option {key!r}: expected true or false, got {text!r}")
    return text.strip().lower() == "true"


def _parse_uri(uri: str, props: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    if uri.startswith("jdbc:sqlite:"):
        return SQLITE, {"path": _sqlite_path(uri, props)}
    if uri.startswith("jdbc:postgresql:"):
        return POSTGRESQL, _postgres_args(uri, props)
    scheme = uri.split("//", 1)[0] if uri.startswith("jdbc:") else uri
    if uri.startswith(("jdbc:mysql:", "jdbc:mariadb:")):
        raise UnsupportedError(f"JDBC catalog uri {scheme!r}: lsmlake connects to SQLite and PostgreSQL only")
    raise InvalidOptionError(
        f"catalog option 'uri' = {scheme!r} is not a JDBC URI lsmlake knows: use jdbc:sqlite:<file> or "
        "jdbc:postgresql://<host>:<port>/<database>"
    )


def _sqlite_path(uri: str, props: Mapping[str, str]) -> str:
    unknown = sorted(set(props) - set(_SQLITE_PROPERTIES))
    if unknown:
        raise InvalidOptionError(
            f"catalog option(s) {[JDBC_PREFIX + k for k in unknown]} are not SQLite connection properties "
            f"lsmlake passes on (known: {[JDBC_PREFIX + k for k in _SQLITE_PROPERTIES]})"
        )
    path = uri[len("jdbc:sqlite:") :].split("?", 1)[0]
    if path.startswith("file:"):
        path = urllib.parse.unquote(urllib.parse.urlparse(path).path)
    if not path or path.startswith(":memory:") or path == ":memory":
        raise InvalidOptionError(
            f"JDBC catalog uri {uri!r}: an in-memory SQLite database is not shared between connections; "
            "name a file (jdbc:sqlite:<path>)"
        )
    return os.path.abspath(path)


def _postgres_args(uri: str, props: Mapping[str, str]) -> dict[str, str]:
    parsed = urllib.parse.urlsplit(uri[len("jdbc:") :])
    if not parsed.hostname:
        raise InvalidOptionError(f"JDBC catalog uri {uri.split('?', 1)[0]!r} names no host")
    args = {"host": parsed.hostname, "port": str(parsed.port or 5432)}
    database = parsed.path.lstrip("/")
    if database:
        args["dbname"] = database
    given = dict(urllib.parse.parse_qsl(parsed.query))
    given.update(props)  # jdbc.<property> over the URI's parameters, as the JDBC driver merges them
    unknown = sorted(k for k in given if k not in _PG_PROPERTIES)
    if unknown:
        raise InvalidOptionError(
            f"PostgreSQL connection properties {unknown} are not ones lsmlake passes on "
            f"(known: {sorted(_PG_PROPERTIES)}, as jdbc.<property> or in the URI)"
        )
    args.update({_PG_PROPERTIES[k]: v for k, v in given.items()})
    return args
