"""lsmlake's REST catalog client against Paimon's own REST server (RESTCatalogServer of the paimon-core
tests jar), with Java Paimon's RESTCatalog on the other side: each reads what the other committed."""

from __future__ import annotations

import json
import pickle
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from java_harness import catalog_check
from rest_server import RestEndpoint, rest_server

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.cli.main import main
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidOptionError,
    MetastoreError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchTagError,
    NotAuthorizedError,
    UnsupportedError,
)
from lsmlake.sql import Session

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def server_snapshot_id(ep: RestEndpoint, table: str) -> int:
    """The latest snapshot the server recorded for ``db.<table>``: it learns of one only through its
    commit endpoint (writing the snapshot file straight to storage would leave this unchanged)."""
    req = urllib.request.Request(
        f"{ep.url}v1/paimon/databases/db/tables/{table}/snapshot",
        headers={"Authorization": f"Bearer {ep.token}"},
    )
    with urllib.request.urlopen(req, timeout=30) as response:
        return int(json.loads(response.read())["snapshot"]["snapshot"]["id"])  # a TableSnapshot


def test_lsmlake_commits_through_the_server_and_java_reads(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        assert t.root.startswith(str(tmp_path / "data"))  # the path the server chose
        t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        last = t.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
        assert last is not None and server_snapshot_id(ep, "t") == last
        answer = catalog_check(
            tmp_path,
            {
                "options": ep.options,
                "read": ["db.t"],
                "write": [
                    {"table": "db.t", "rows": [[3, "c"]]},  # Java commits to lsmlake's table
                    {"table": "javadb.j", "create": True, "rows": [[10, "x"], [11, "y"]]},
                ],
            },
        )
        assert answer["tables"] == {"db": ["t"], "javadb": ["j"]}
        assert sorted(answer["rows"]["db.t"]) == [["1", "a"], ["2", "B"], ["3", "c"]]

        # and back: lsmlake reads Java's table and Java's commit to its own, through the server
        again = lsmlake.Catalog(ep.warehouse, options=ep.options)
        assert again.list_databases() == ["db", "javadb"]
        assert by_id(again.open_table("javadb.j").read().to_pylist()) == [
            {"id": 10, "v": "x"},
            {"id": 11, "v": "y"},
        ]
        assert by_id(again.open_table("db.t").read().to_pylist()) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "B"},
            {"id": 3, "v": "c"},
        ]


def test_alter_through_the_server_is_what_java_sees(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        altered = cat.alter_table(
            "db.t", sc.add_column("n", "INT"), sc.set_option("snapshot.num-retained.max", "70")
        )
        assert altered is not None and altered.schema.id == 1
        altered.write(pa.table({"id": [1], "v": ["a"], "n": pa.array([5], pa.int32())}))
        answer = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t"]})
        assert answer["rows"]["db.t"] == [["1", "a", "5"]]
        reopened = lsmlake.Catalog(ep.warehouse, options=ep.options).open_table("db.t")
        assert reopened.schema.field_names == ["id", "v", "n"]
        assert reopened.options.raw["snapshot.num-retained.max"] == "70"


def test_server_defaults_and_errors(tmp_path: Path) -> None:
    defaults = {"table-default.snapshot.num-retained.max": "90"}
    with rest_server(tmp_path / "data", defaults=defaults) as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
        assert t.options.raw["snapshot.num-retained.max"] == "90"  # the server's table-default.*
        with pytest.raises(AlreadyExistsError, match="database db already exists"):
            cat.create_database("db")
        with pytest.raises(NoSuchDatabaseError, match="database nodb does not exist"):
            cat.list_tables("nodb")
        by_url = lsmlake.Catalog(ep.url, options={k: v for k, v in ep.options.items() if k != "uri"})
        assert by_url.list_databases() == ["db"]  # the server's URL first, the warehouse as an option
        with pytest.raises(NotAuthorizedError, match="'token'"):
            lsmlake.Catalog(ep.warehouse, options={**ep.options, "token": "wrong"})
        with pytest.raises(MetastoreError, match="cannot be reached"):
            lsmlake.Catalog(ep.warehouse, options={**ep.options, "uri": "http://127.0.0.1:9"})


def test_rename_through_the_server(tmp_path: Path) -> None:
    """The server renames (the harness's server with its rename record fixed, RestServerDispatcher.java):
    lsmlake reads and commits to the renamed table at the path the server gives, and Java reads it."""
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"]).write(
            pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)
        )
        cat.create_table("db.taken", schema=SCHEMA)
        with pytest.raises(AlreadyExistsError, match=r"table db\.taken already exists"):
            cat.rename_table("db.t", "db.taken")
        with pytest.raises(NoSuchDatabaseError, match="database nodb does not exist"):
            cat.rename_table("db.t", "nodb.t")
        cat.rename_table("db.t", "db.u")
        assert cat.list_tables("db") == ["taken", "u"] and not cat.table_exists("db.t")
        moved = cat.open_table("db.u")
        assert moved.root == str(tmp_path / "data" / "db.db" / "u")
        moved.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        assert server_snapshot_id(ep, "u") == 2
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.u"]})
        assert sorted(java["rows"]["db.u"]) == [["1", "a"], ["2", "b"]]
        with pytest.raises(NoSuchTableError, match=r"table db\.t does not exist"):
            cat.rename_table("db.t", "db.v")


def test_the_unfixed_server_misleads_java_too(tmp_path: Path) -> None:
    """Why the harness fixes the server's records: Paimon 1.4.2's RESTCatalogServer moves the table's
    directory on a rename but keeps the old path, so Java's RESTCatalog reads the renamed table as
    empty and cannot commit to it (lsmlake refuses to open it rather than read an empty table); and it
    records a new branch's latest snapshot as main's, so Java reads an empty branch as main."""
    with rest_server(tmp_path / "data", server_fixes=False) as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"]).write(
            pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)
        )
        cat.rename_table("db.t", "db.u")
        assert (tmp_path / "data" / "db.db" / "u" / "schema" / "schema-0").is_file()
        with pytest.raises(NoSuchTableError, match="holds no schema-0 file"):
            cat.open_table("db.u")
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.u"]})
        assert java["rows"]["db.u"] == []  # the row is in db.db/u; Java looks in db.db/t
        # a commit to a branch writes the branch's snapshot number into main's LATEST hint (the
        # server's table object is main's); Java and lsmlake take main's latest snapshot from the
        # server's record (GET .../snapshot), not from the hint, and read main right
        w = cat.create_table("db.w", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        w.create_tag("one", w.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)))
        w.create_branch("b", tag="one").write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        assert (tmp_path / "data" / "db.db" / "w" / "snapshot" / "LATEST").read_text() == "2"
        assert not (tmp_path / "data" / "db.db" / "w" / "snapshot" / "snapshot-2").exists()
        assert cat.open_table("db.w").read().to_pylist() == [{"id": 1, "v": "a"}]
        # a new branch's record is a copy of main's latest: an empty branch reads as main, for Java too
        w.create_branch("empty")
        java = catalog_check(
            tmp_path, {"options": ep.options, "read": ["db.w", "db.w$branch_b", "db.w$branch_empty"]}
        )
        assert java["rows"]["db.w"] == [["1", "a"]]
        assert sorted(java["rows"]["db.w$branch_b"]) == [["1", "a"], ["2", "b"]]
        assert java["rows"]["db.w$branch_empty"] == [["1", "a"]]


def test_header_options_and_the_bearer_token_reach_the_server(tmp_path: Path) -> None:
    defaults = {"header.X-From-Server": "server-value"}  # a header the server asks clients to send
    with rest_server(tmp_path / "data", defaults=defaults) as ep:
        cat = lsmlake.Catalog(ep.warehouse, options={**ep.options, "header.X-Client": "client-value"})
        cat.create_database("db")
        config, create = ep.received_headers()[-2:]
        assert config["authorization"] == f"Bearer {ep.token}" and config["x-client"] == "client-value"
        assert "x-from-server" not in config  # known only once /v1/config answered
        assert create["x-client"] == "client-value" and create["x-from-server"] == "server-value"
        assert create["authorization"] == f"Bearer {ep.token}"


def test_rollback_goes_through_the_server_and_other_verbs_are_refused(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        first = t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        t.create_tag("one", first)
        second = t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        third = t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
        assert first is not None and second is not None and third is not None
        result = t.rollback_to(second)
        assert (result.snapshot_id, result.removed_snapshot_ids) == (second, (third,))
        assert server_snapshot_id(ep, "t") == second  # the server's record moved, not only the files
        assert by_id(t.read().to_pylist()) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
        assert t.rollback_to(tag="one").snapshot_id == first and server_snapshot_id(ep, "t") == first
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t"]})
        assert java["rows"]["db.t"] == [["1", "a"]]
        after = t.write(pa.table({"id": [4], "v": ["d"]}, schema=SCHEMA))
        assert after == first + 1 and server_snapshot_id(ep, "t") == after
        fifth = t.write(pa.table({"id": [5], "v": ["e"]}, schema=SCHEMA))
        assert fifth is not None and server_snapshot_id(ep, "t") == fifth
        Session(cat).execute(f"CALL sys.rollback_to(`table` => 'db.t', snapshot_id => {after})")
        assert server_snapshot_id(ep, "t") == after  # SQL's rollback goes through the server too
        assert by_id(t.read().to_pylist()) == [{"id": 1, "v": "a"}, {"id": 4, "v": "d"}]
        assert t.catalog_env is not None  # a rollback from a snapshot that is no longer the latest:
        with pytest.raises(CommitConflictError, match=f"another commit landed after snapshot {fifth}"):
            t.catalog_env.rollback(t.root, snapshot_id=first, tag=None, from_snapshot=fifth)
        assert server_snapshot_id(ep, "t") == after
        with pytest.raises(NoSuchTagError, match="tag 'nope' of table db\\.t does not exist"):
            t.rollback_to(tag="nope")
        with pytest.raises(UnsupportedError, match="alter the schema on a branch"):
            t.create_branch("b").alter(sc.add_column("n", "INT"))
        assert pickle.loads(pickle.dumps(t.catalog_env)) == t.catalog_env  # plain data: travels to workers


def test_the_command_line_and_sql_take_the_rest_options(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        options = [arg for k, v in ep.options.items() if k != "warehouse" for arg in ("-C", f"{k}={v}")]
        sql = (
            "CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING) "
            "WITH ('bucket' = '1'); INSERT INTO db.t VALUES (1, 'a'), (2, 'b'); "
            "ALTER TABLE db.t ADD n INT; UPDATE db.t SET n = 7 WHERE id = 2"
        )
        made = CliRunner().invoke(main, ["-w", ep.warehouse, *options, "sql", sql])
        assert made.exit_code == 0, made.output
        table = lsmlake.Catalog(ep.warehouse, options=ep.options).open_table("db.t")
        assert by_id(table.read().to_pylist()) == [
            {"id": 1, "v": "a", "n": None},
            {"id": 2, "v": "b", "n": 7},
        ]
        assert server_snapshot_id(ep, "t") == table.latest_snapshot().id  # type: ignore[union-attr]
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t"]})
        assert sorted(java["rows"]["db.t"]) == [["1", "a", None], ["2", "b", "7"]]


def test_create_catalog_in_sql_opens_the_rest_catalog(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        session = Session(lsmlake.Catalog(str(tmp_path / "local")))
        with_options = ", ".join(f"'{k}' = '{v}'" for k, v in {"type": "paimon", **ep.options}.items())
        session.execute(
            f"CREATE CATALOG paimon_rest WITH ({with_options}); USE CATALOG paimon_rest; CREATE DATABASE db;"
            "CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('bucket' = '1');"
            "INSERT INTO paimon_rest.db.t VALUES (1, 'a')"
        )
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t"]})
        assert java["rows"]["db.t"] == [["1", "a"]]
        assert lsmlake.Catalog(str(tmp_path / "local")).list_databases() == []  # nothing went there


def test_permission_warehouse_and_paging_errors(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        names = [f"d{i:03d}" for i in range(105)]  # more than the server's page of 100
        for name in names:
            cat.create_database(name)
        assert cat.list_databases() == names
        cat.create_table("d000.t", schema=SCHEMA)
        ep.deny("table", "d000.t")
        with pytest.raises(NotAuthorizedError, match=r"no permission \(HTTP 403\)"):
            cat.open_table("d000.t")
        ep.deny("database", "d001")
        with pytest.raises(NotAuthorizedError, match="'token'"):
            cat.list_tables("d001")
        with pytest.raises(InvalidOptionError, match="does not serve the warehouse 'elsewhere'"):
            lsmlake.Catalog("elsewhere", options={k: v for k, v in ep.options.items() if k != "warehouse"})


def test_commits_carry_partition_statistics(tmp_path: Path) -> None:
    """Each commit sends its delta's per-partition statistics; the server sums them into the table's
    record, file and byte counts, which must then equal the live files' (compactions included)."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)]
    )
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table(
            "db.t", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"}
        )
        for i in range(4):
            t.write(pa.table({"id": [i, i + 1, i + 2], "dt": ["a", "b", "a"]}, schema=schema))
        t.compact(full=True)
        req = urllib.request.Request(
            f"{ep.url}v1/paimon/databases/db/tables/t/snapshot",
            headers={"Authorization": f"Bearer {ep.token}"},
        )
        with urllib.request.urlopen(req, timeout=30) as response:
            recorded = json.loads(response.read())["snapshot"]
        files = cat.get_table("db.t$files").read()
        assert recorded["snapshot"]["id"] == t.latest_snapshot().id  # type: ignore[union-attr]
        assert recorded["recordCount"] == sum(files.column("record_count").to_pylist())
        assert recorded["fileCount"] == files.num_rows
        assert recorded["fileSizeInBytes"] == sum(files.column("file_size_in_bytes").to_pylist())
        # the newest file's creation time (the full compaction's outputs are the newest files; the
        # server keeps the max over every commit), read in the local time zone as Java does
        created = files.column("creation_time").to_pylist()  # local wall-clock datetimes
        assert recorded["lastFileCreationTime"] == max(round(c.timestamp() * 1000) for c in created)


def test_java_reads_a_partitioned_deletion_vector_table_lsmlake_wrote(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("dt", pa.string(), nullable=False),
            ("n", pa.int32()),
        ]
    )
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table(
            "db.dv",
            schema=schema,
            primary_key=["id", "dt"],
            partition_keys=["dt"],
            options={"bucket": "2", "deletion-vectors.enabled": "true"},
        )
        t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "n": [1, 2, 3]}, schema=schema))
        t.write(pa.table({"id": [2, 4], "dt": ["a", "b"], "n": [20, 4]}, schema=schema))
        t.delete("id = 1")
        expected = sorted([str(r["id"]), r["dt"], str(r["n"])] for r in t.read().to_pylist())
        assert expected == [["2", "a", "20"], ["3", "b", "3"], ["4", "b", "4"]]
        answer = catalog_check(tmp_path, {"options": ep.options, "read": ["db.dv"]})
        assert sorted(answer["rows"]["db.dv"]) == expected
