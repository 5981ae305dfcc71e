# Sourced by .ci/run: a throwaway PostgreSQL cluster on a free loopback port for the JDBC catalog tests
# (tests/catalog). Exports LSMLAKE_TEST_POSTGRES_URI (and LSMLAKE_REQUIRE_POSTGRES=1, so that those tests
# fail instead of skipping); the server is stopped and its directory removed when the shell exits.

pg_bindir() {
  local d
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return
  fi
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
}

PG_BIN="$(pg_bindir)"
if [ -z "$PG_BIN" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  # Debian's package; its service is not started (the cluster below is our own)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
  PG_BIN="$(pg_bindir)"
fi
if [ -z "$PG_BIN" ]; then
  echo "PostgreSQL (initdb, pg_ctl) not found: install Debian's postgresql package" >&2
  exit 1
fi

PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/lsmlake-pg.XXXXXX")"
PG_RUN=()
if [ "$(id -u)" = 0 ]; then
  # the server refuses to run as root: run it as the package's postgres user (or nobody)
  PG_USER=postgres
  id -u "$PG_USER" >/dev/null 2>&1 || PG_USER=nobody
  chown "$PG_USER" "$PG_DIR"
  PG_RUN=(runuser -u "$PG_USER" --)
fi
PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${PG_RUN[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U lsmlake --no-sync -E UTF8 >"$PG_DIR/initdb.log"
"${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR -F -c max_connections=200" start >/dev/null
pg_cleanup() {
  "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
trap pg_cleanup EXIT
export LSMLAKE_TEST_POSTGRES_URI="jdbc:postgresql://127.0.0.1:$PG_PORT/postgres?user=lsmlake"
export LSMLAKE_REQUIRE_POSTGRES=1
