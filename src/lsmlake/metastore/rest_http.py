"""Kept-alive HTTP connections for the REST catalog's GET requests: one small pool per client, per process."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

MAX_IDLE = 8
"""Idle connections kept per client; more concurrent requests open (and then close) their own."""
# errors of a kept connection the server closed while it was idle: nothing of the request was
# processed, so a GET is sent again on a new connection
_STALE = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError, BrokenPipeError)


class ConnectionPool:
    """Idle HTTP/1.1 connections to one server, shared by a process's threads (a lock guards the idle
    list; each request has a connection to itself). Used only for GETs, which are safe to send again
    when a kept connection turns out closed, and only when no proxy applies to the server (urllib,
    which honours the proxy settings, sends everything else). A pickled copy starts empty, and so does
    a forked child's: two processes on one socket would read each other's answers."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[http.client.HTTPConnection] = []
        self._direct: dict[str, bool] = {}

    def _own(self) -> threading.Lock:
        """The lock, after forgetting (not closing: the parent still uses them) the connections and
        the lock a forked child inherited."""
        if self._pid != os.getpid():
            self._lock = threading.Lock()
            self._idle = []
            self._pid = os.getpid()
        return self._lock

    def __reduce__(self) -> tuple[Any, ...]:
        return (ConnectionPool, ())

    def usable(self, url: str) -> bool:
        """Whether ``url`` is reached directly over http(s) (no proxy setting applies to it)."""
        parts = urllib.parse.urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc}"
        with self._own():
            known = self._direct.get(key)
        if known is None:
            proxies = urllib.request.getproxies()
            host = parts.hostname or ""
            known = parts.scheme in ("http", "https") and (
                parts.scheme not in proxies or bool(urllib.request.proxy_bypass(host))
            )
            with self._own():
                self._direct[key] = known
        return known

    def get(self, url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, str]:
        """GET ``url``: its status and body text, on a kept connection when one is idle (sent again on a
        new one when the server had closed it). Transport errors raise as http.client/OSError ones."""
        parts = urllib.parse.urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        with self._own():
            conn = self._idle.pop() if self._idle else None
        if conn is not None:
            try:
                return self._send(conn, target, headers)
            except _STALE:
                pass  # closed by the server while idle: a new connection below
        return self._send(self._connect(parts, timeout), target, headers)

    def _connect(self, parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = kind(parts.hostname or "", parts.port, timeout=timeout)
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _send(
        self, conn: http.client.HTTPConnection, target: str, headers: Mapping[str, str]
    ) -> tuple[int, str]:
        try:
            conn.request("GET", target, headers=dict(headers))
            response = conn.getresponse()
            _ack_now(conn)
            text = response.read().decode("utf-8", "replace")
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            with self._own():
                keep = len(self._idle) < MAX_IDLE
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()
        return response.status, text

    def close(self) -> None:
        """Close the idle connections."""
        with self._own():
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _ack_now(conn: http.client.HTTPConnection) -> None:
    """Acknowledge the response's headers at once (Linux's TCP_QUICKACK): a server that writes headers and
    body separately with Nagle's algorithm on (okhttp's MockWebServer, under Paimon's RESTCatalogServer)
    otherwise holds the body until the client's delayed ACK, ~40 ms later, on a kept connection."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is not None and conn.sock is not None:
        with contextlib.suppress(OSError):  # a socket that does not take it only acknowledges later
            conn.sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
