"""Paimon's own REST catalog server (RESTCatalogServer of the paimon-core tests jar) on loopback, for tests.

The Java harness (tests/java) builds the classpath; ``lsmlake.harness.RestServer`` starts the server on a
free port with a data directory, a warehouse name and a bearer token, prints its URL, and stops when its
stdin closes."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

_JAVA = str(Path(__file__).resolve().parent / "java")
if _JAVA not in sys.path:
    sys.path.insert(0, _JAVA)

from java_harness import build_harness, tools_missing  # noqa: E402

START_TIMEOUT = 120.0


@dataclass(frozen=True)
class RestEndpoint:
    """A running REST catalog server: its URL, warehouse name, token and data directory."""

    url: str
    warehouse: str
    token: str
    data_path: Path
    _ask: Callable[[str], str] = field(repr=False, compare=False)

    def deny(self, kind: str, name: str) -> None:
        """From now on the server answers 403 for database ``name`` (``kind`` "database") or table
        ``db.t`` (``kind`` "table")."""
        self._ask(f"deny-{kind} {name}")

    def requests(self) -> list[dict[str, str]]:
        """Every request the server received so far: its ``method``, ``path`` (with the query) and
        ``body``."""
        answer: list[dict[str, str]] = json.loads(self._ask("requests"))
        return answer

    def set_data_token(self, table: str, token: Mapping[str, str], expires_at_millis: int) -> None:
        """From now on the server serves ``token`` (a map of FileIO options) as table ``db.t``'s data
        token, expiring at ``expires_at_millis``."""
        self._ask(f"data-token {table} {expires_at_millis} {json.dumps(dict(token))}")

    def received_headers(self) -> list[dict[str, str]]:
        """The headers of every request the server received so far (names lower-cased)."""
        answer: list[dict[str, str]] = json.loads(self._ask("headers"))
        return answer

    @property
    def options(self) -> dict[str, str]:
        """lsmlake's (and Java Paimon's) catalog options for this server."""
        return {
            "metastore": "rest",
            "uri": self.url,
            "warehouse": self.warehouse,
            "token.provider": "bear",
            "token": self.token,
        }


@contextmanager
def rest_server(
    data_path: Path,
    *,
    warehouse: str = "lake",
    token: str = "secret-token",
    defaults: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    dlf: Mapping[str, str] | None = None,
    server_fixes: bool = True,
) -> Iterator[RestEndpoint]:
    """Run the server for the block (skips the test when java or mvn is missing). ``dlf``: the server
    accepts only requests DLF-signed with this key (``access_key_id``, ``access_key_secret``, optional
    ``security_token``, ``region``), checked by Java Paimon's DLF signer, instead of the bearer
    ``token``. ``server_fixes``: work around the server's bugs that mislead every client, Java's too
    (RestServerDispatcher.java: a renamed table's record keeps its old path; a new branch's latest
    snapshot is recorded as main's; concurrent requests corrupt its unlocked stores, so they are
    handled one at a time)."""
    missing = tools_missing()
    if missing:
        pytest.skip(f"Java Paimon harness: {missing}")
    data_path.mkdir(parents=True, exist_ok=True)
    spec = {
        "data_path": str(data_path),
        "warehouse": warehouse,
        "token": token,
        "defaults": {"prefix": "paimon", **(defaults or {})},
        "overrides": dict(overrides or {}),
        "server_fixes": server_fixes,
        **({"dlf": dict(dlf)} if dlf is not None else {}),
    }
    log = (data_path.parent / f"{data_path.name}-rest-server.log").open("w")
    proc = subprocess.Popen(
        [
            "java",
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-cp",
            build_harness(),
            "lsmlake.harness.RestServer",
            json.dumps(spec),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = lines.get(timeout=START_TIMEOUT)
        if line is None:
            log.flush()
            raise RuntimeError(f"the REST server exited: {Path(log.name).read_text()[-3000:]}")
        url = str(json.loads(line)["url"])

        def ask(command: str) -> str:
            assert proc.stdin is not None
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
            reply = lines.get(timeout=START_TIMEOUT)
            if reply is None:
                raise RuntimeError("the REST server exited")
            return reply

        yield RestEndpoint(url, warehouse, token, data_path, ask)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
