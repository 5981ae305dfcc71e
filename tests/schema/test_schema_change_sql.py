"""ALTER TABLE in SQL: Flink and Spark spellings, errors naming the statement, RENAME TO."""

from __future__ import annotations

from typing import Any

import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, NoSuchTableError, UnsupportedError
from lsmlake.schema_change import SchemaChangeError
from lsmlake.sql import Result, SqlError, execute
from lsmlake.table import Table

USERS = """
CREATE TABLE db.users (
  id INT, name STRING, age INT, dt STRING,
  PRIMARY KEY (id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('bucket' = '2');
INSERT INTO db.users VALUES (1, 'ann', 31, 'a'), (2, 'bob', 42, 'a'), (3, 'cy', 23, 'b');
"""


def run(catalog: lsmlake.Catalog, text: str) -> list[Result]:
    return execute(catalog, text, database="db")


def table(catalog: lsmlake.Catalog, name: str = "db.users") -> Table:
    t = catalog.get_table(name)
    assert isinstance(t, Table)
    return t


def rows(catalog: lsmlake.Catalog, name: str = "db.users") -> list[dict[str, Any]]:
    return table(catalog, name).read().sort_by("id").to_pylist()


@pytest.fixture
def users(catalog: lsmlake.Catalog) -> lsmlake.Catalog:
    run(catalog, USERS)
    return catalog


def test_add_columns_in_every_spelling(users: lsmlake.Catalog) -> None:
    results = run(
        users,
        """
        ALTER TABLE users ADD COLUMN email STRING COMMENT 'mail' AFTER name;
        ALTER TABLE users ADD nick VARCHAR(10) FIRST;
        ALTER TABLE users ADD (score DOUBLE, born DATE AFTER age);
        ALTER TABLE users ADD COLUMNS (tags ARRAY<STRING>, attrs MAP<STRING, INT>);
        ALTER TABLE users ADD COLUMN x1 INT, x2 BIGINT;
    """,
    )
    assert [r.message for r in results] == [f"altered table db.users (schema {i})" for i in range(1, 6)]
    t = table(users)
    assert t.schema.field_names == [
        "nick",
        "id",
        "name",
        "email",
        "age",
        "born",
        "dt",
        "score",
        "tags",
        "attrs",
        "x1",
        "x2",
    ]
    assert t.schema.field("email").description == "mail"
    assert all(r["email"] is None and r["tags"] is None for r in rows(users))


def test_drop_rename_modify_alter_column(users: lsmlake.Catalog) -> None:
    run(
        users,
        """
        ALTER TABLE users ADD (a INT, b INT, c INT);
        ALTER TABLE users DROP COLUMN a;
        ALTER TABLE users DROP (b, c);
        ALTER TABLE users RENAME COLUMN age TO years;
        ALTER TABLE users MODIFY years BIGINT COMMENT 'age in years';
        ALTER TABLE users ADD (n SMALLINT, m FLOAT);
        ALTER TABLE users ALTER COLUMN n TYPE INT;
        ALTER TABLE users ALTER m TYPE DOUBLE;
        ALTER TABLE users ALTER COLUMN m COMMENT 'measure';
        ALTER TABLE users ALTER COLUMN m FIRST;
        ALTER TABLE users ALTER COLUMN m AFTER id;
        ALTER TABLE users DROP COLUMN IF EXISTS nope;
        ALTER TABLE users DROP COLUMNS IF EXISTS n, nope;
        INSERT INTO users VALUES (4, 1.5, 'di', 54, 'b');
    """,
    )
    t = table(users)
    assert t.schema.field_names == ["id", "m", "name", "years", "dt"]
    years = t.schema.field("years")
    assert years.type.root == "BIGINT" and years.description == "age in years"
    assert t.schema.field("m").description == "measure"
    assert [(r["id"], r["years"], r["m"]) for r in rows(users)] == [
        (1, 31, None),
        (2, 42, None),
        (3, 23, None),
        (4, 54, 1.5),
    ]
    selected = run(users, "SELECT id FROM users WHERE years > 40 ORDER BY id")[0].rows
    assert [r["id"] for r in selected] == [2, 4]


def test_modify_and_alter_nullability(users: lsmlake.Catalog) -> None:
    run(
        users,
        "CREATE TABLE nn (id INT NOT NULL, x INT NOT NULL, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '1')",
    )
    run(users, "ALTER TABLE nn ALTER COLUMN x DROP NOT NULL")
    assert table(users, "db.nn").schema.field("x").type.nullable
    with pytest.raises(SchemaChangeError, match="cannot make column 'x' NOT NULL"):
        run(users, "ALTER TABLE nn ALTER COLUMN x SET NOT NULL")
    with pytest.raises(SchemaChangeError, match="cannot make column 'x' NOT NULL"):
        run(users, "ALTER TABLE nn MODIFY x INT NOT NULL")
    # MODIFY of a primary-key column with its own type is a no-op (keys are NOT NULL implicitly)
    assert run(users, "ALTER TABLE nn MODIFY id INT")[0].message == "table db.nn unchanged"
    with pytest.raises(SchemaChangeError, match="primary-key column 'id'"):
        run(users, "ALTER TABLE nn MODIFY id BIGINT")


def test_columns_may_be_named_like_clause_keywords(users: lsmlake.Catalog) -> None:
    run(users, "ALTER TABLE users ADD partition INT; ALTER TABLE users ADD COLUMN watermark BIGINT")
    run(users, "ALTER TABLE users RENAME partition TO primary")
    assert table(users).schema.field_names[-2:] == ["primary", "watermark"]
    run(users, "ALTER TABLE users DROP primary; ALTER TABLE users DROP COLUMN watermark")
    assert table(users).schema.field_names == ["id", "name", "age", "dt"]


def test_set_reset_options_and_comment(users: lsmlake.Catalog) -> None:
    run(
        users,
        """
        ALTER TABLE users SET ('snapshot.num-retained.max' = '20', 'write-only' = 'true');
        ALTER TABLE users SET TBLPROPERTIES ('comment' = 'people', 'manifest.merge-min-count' = '5');
    """,
    )
    t = table(users)
    assert t.schema.comment == "people" and "comment" not in t.schema.options
    assert t.schema.options["snapshot.num-retained.max"] == "20" and t.options.get_bool("write-only")
    run(
        users,
        """
        ALTER TABLE users RESET ('write-only', 'comment');
        ALTER TABLE users UNSET TBLPROPERTIES IF EXISTS ('manifest.merge-min-count', 'nope');
    """,
    )
    t = table(users)
    assert t.schema.comment is None
    assert dict(t.schema.options) == {"bucket": "2", "snapshot.num-retained.max": "20"}
    assert "COMMENT" not in run(users, "SHOW CREATE TABLE users")[0].message


def test_rename_table(users: lsmlake.Catalog) -> None:
    renamed = run(users, "ALTER TABLE users RENAME TO people")[0]
    assert renamed.message == "renamed table db.users to db.people"
    assert users.list_tables("db") == ["people"] and len(rows(users, "db.people")) == 3
    users.create_database("arch")
    run(users, "ALTER TABLE db.people RENAME TO arch.people_2024")
    assert users.list_tables("arch") == ["people_2024"]
    assert run(users, "SELECT count(*) AS n FROM arch.people_2024")[0].rows == [{"n": 3}]


def test_if_exists_and_errors_name_the_statement(users: lsmlake.Catalog) -> None:
    assert run(users, "ALTER TABLE IF EXISTS nope ADD x INT")[0].message == "table db.nope does not exist"
    with pytest.raises(NoSuchTableError, match="statement 1"):
        run(users, "ALTER TABLE nope ADD x INT")
    cases: list[tuple[str, type[Exception], str]] = [
        ("ALTER TABLE users DROP COLUMN id", SchemaChangeError, "primary-key column 'id'"),
        ("ALTER TABLE users RENAME COLUMN dt TO day", SchemaChangeError, "partition column 'dt'"),
        ("ALTER TABLE users MODIFY age SMALLINT", SchemaChangeError, "without losing information"),
        ("ALTER TABLE users ALTER COLUMN age TYPE STRING", SchemaChangeError, "without losing information"),
        ("ALTER TABLE users ADD x INT NOT NULL", SchemaChangeError, "NOT NULL"),
        ("ALTER TABLE users SET ('bucket' = '-1')", UnsupportedError, "bucket"),
        ("ALTER TABLE users SET ('merge-engine' = 'first-row')", UnsupportedError, "merge-engine"),
        ("ALTER TABLE users SET ('nope' = '1')", InvalidOptionError, "unknown table option"),
        ("ALTER TABLE users ADD PARTITION (dt = 'x')", UnsupportedError, "ADD PARTITION"),
        ("ALTER TABLE users DROP PRIMARY KEY", UnsupportedError, "DROP PRIMARY"),
        ("ALTER TABLE users ADD CONSTRAINT pk PRIMARY KEY (id) NOT ENFORCED", UnsupportedError, "PRIMARY"),
        ("ALTER TABLE users DROP WATERMARK", UnsupportedError, "WATERMARK"),
        ("ALTER TABLE users CHANGE COLUMN age age BIGINT", UnsupportedError, "CHANGE COLUMN"),
        ("ALTER TABLE users ALTER COLUMN age SET DEFAULT age + 1", SqlError, "takes a literal"),
        ("ALTER TABLE users FROBNICATE", SqlError, "ALTER TABLE supports"),
        ("ALTER TABLE users ADD x NOTATYPE", SqlError, "unknown column type"),
        ("ALTER TABLE users RENAME COLUMN age", SqlError, "expected TO"),
        ("ALTER TABLE users ADD x INT garbage", SqlError, "unexpected text"),
        ("ALTER TABLE users$files ADD x INT", SqlError, "read-only"),
        ("ALTER VIEW v AS SELECT 1", UnsupportedError, "ALTER VIEW is not supported"),
        ("ALTER DATABASE db SET ('a' = 'b')", UnsupportedError, "ALTER DATABASE is not supported"),
    ]
    for text, error, message in cases:
        with pytest.raises(error, match=message) as info:
            run(users, text)
        assert "statement 1 (line 1: ALTER" in str(info.value), text
    assert table(users).schema.id == 0  # nothing above wrote a schema
