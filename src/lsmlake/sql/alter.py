"""ALTER TABLE: Flink and Spark spellings of schema changes, turned into lsmlake.schema_change calls.

Supported (one action per statement; lists where the dialects allow them)::

    ALTER TABLE [IF EXISTS] t ADD [COLUMN | COLUMNS] c TYPE [COMMENT 'x'] [FIRST | AFTER x] [, ...]
    ALTER TABLE t ADD [COLUMNS] (c1 T1 [COMMENT 'x'] [FIRST | AFTER x], c2 T2, ...)
    ALTER TABLE t DROP [COLUMN | COLUMNS] [IF EXISTS] c [, ...]   |  DROP [COLUMNS] (c1, c2)
    ALTER TABLE t RENAME [COLUMN] a TO b
    ALTER TABLE t MODIFY [COLUMN] c TYPE [NOT NULL] [COMMENT 'x'] [FIRST | AFTER x]  |  MODIFY (c T, ...)
    ALTER TABLE t ALTER [COLUMN] c {TYPE T | SET NOT NULL | DROP NOT NULL | COMMENT 'x' | FIRST | AFTER x
                                    | SET DEFAULT literal | DROP DEFAULT}
    ALTER TABLE t SET ('k' = 'v', ...)  |  SET TBLPROPERTIES ('k' = 'v', ...)
    ALTER TABLE t RESET ('k', ...)      |  UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)
    ALTER TABLE t RENAME TO [db.]t2

The table option ``comment`` is the table comment (as in Paimon's Spark catalog).
"""

from __future__ import annotations

from lsmlake.core.sql_lexer import Cursor, Statement, Token, parse_key_values
from lsmlake.core.type_parser import parse_type
from lsmlake.core.types import DataType
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.schema_change import (
    SchemaChange,
    add_column,
    drop_column,
    remove_option,
    rename_column,
    set_option,
    update_column_comment,
    update_column_default_value,
    update_column_nullability,
    update_column_position,
    update_column_type,
    update_comment,
)
from lsmlake.schema_change.changes import UpdateColumnType
from lsmlake.sql.common import Result, default_literal
from lsmlake.sql.context import SqlContext
from lsmlake.sql.partitions import drop_partition_result, parse_drop_partitions
from lsmlake.table import Table


def _position(cur: Cursor) -> dict[str, object]:
    if cur.accept("FIRST"):
        return {"first": True}
    if cur.accept("AFTER"):
        return {"after": cur.name("a column name after AFTER")}
    if cur.accept("BEFORE"):
        return {"before": cur.name("a column name after BEFORE")}
    return {}


def _column_def(cur: Cursor) -> tuple[str, DataType, str | None, dict[str, object]]:
    """``name type [NOT NULL] [COMMENT 'x'] [FIRST | AFTER x]``."""
    name = cur.name("a column name")
    if cur.accept("AS"):
        raise UnsupportedError(f"ALTER TABLE: computed column {name!r} is not supported")
    dtype = parse_type(cur)
    comment = None
    if cur.accept("COMMENT"):
        comment = cur.string("a column comment")
    return name, dtype, comment, _position(cur)


def _def_list(cur: Cursor) -> list[tuple[str, DataType, str | None, dict[str, object]]]:
    """Column definitions, either in parentheses or as a comma-separated run to the end."""
    parens = cur.accept("(")
    out = [_column_def(cur)]
    while cur.accept(","):
        out.append(_column_def(cur))
    if parens:
        cur.expect(")")
    return out


def _name_list(cur: Cursor) -> list[str]:
    parens = cur.accept("(")
    out = [cur.name("a column name")]
    while cur.accept(","):
        out.append(cur.name("a column name"))
    if parens:
        cur.expect(")")
    return out


def _option_keys(toks: list[Token]) -> list[str]:
    keys = [t.value for t in toks if t.kind == "string"]
    if not keys or len(toks) != 2 * len(keys) - 1 or any(t.value != "," for t in toks[1::2]):
        raise SqlError("RESET / UNSET TBLPROPERTIES: expected a list of 'key' strings")
    return keys


def _set_options(pairs: dict[str, str]) -> list[SchemaChange]:
    return [update_comment(v) if k == "comment" else set_option(k, v) for k, v in pairs.items()]


def _reset_options(keys: list[str]) -> list[SchemaChange]:
    return [update_comment(None) if k == "comment" else remove_option(k) for k in keys]


def _is(cur: Cursor, ahead: int, *values: str) -> bool:
    tok = cur.peek(ahead)
    return tok is not None and (tok.is_word(*values) or (tok.kind == "op" and tok.value in values))


def _refuse_constraints(cur: Cursor, verb: str) -> None:
    """Partition, primary-key, constraint and watermark clauses (a column may still be called so)."""
    if _is(cur, 0, "IF") or (_is(cur, 0, "PARTITION") and _is(cur, 1, "(")):
        raise UnsupportedError(
            f"ALTER TABLE ... {verb} PARTITION is not supported (partitions appear and "
            "go with the rows written)"
        )
    primary = _is(cur, 0, "PRIMARY") and _is(cur, 1, "KEY")
    if primary or (_is(cur, 0, "CONSTRAINT") and _is(cur, 2, "PRIMARY")):
        raise UnsupportedError(
            f"ALTER TABLE ... {verb} PRIMARY KEY is not supported: the primary key cannot change"
        )
    if _is(cur, 0, "WATERMARK") and (cur.peek(1) is None or _is(cur, 1, "FOR")):
        raise UnsupportedError(f"ALTER TABLE ... {verb} WATERMARK is not supported")


def _add(cur: Cursor) -> list[SchemaChange]:
    if not cur.accept("COLUMNS") and not cur.accept("COLUMN"):
        _refuse_constraints(cur, "ADD")
    return [
        add_column(name, dtype, comment=comment, **position)  # type: ignore[arg-type]
        for name, dtype, comment, position in _def_list(cur)
    ]


def _drop(cur: Cursor, table: Table) -> list[SchemaChange]:
    if not cur.accept("COLUMNS") and not cur.accept("COLUMN"):
        _refuse_constraints(cur, "DROP")
    if_exists = cur.accept("IF", "EXISTS")
    names = _name_list(cur)
    if if_exists:
        names = [n for n in names if n in table.schema.field_names]
    return [drop_column(n) for n in names]


def _modify(cur: Cursor, table: Table) -> list[SchemaChange]:
    """Flink's MODIFY: the column becomes exactly what the definition says (type, nullability)."""
    cur.accept("COLUMN")
    changes: list[SchemaChange] = []
    for name, dtype, comment, position in _def_list(cur):
        if name not in table.schema.field_names:
            raise SqlError(f"ALTER TABLE ... MODIFY: column {name!r} does not exist in {table.name}")
        current = table.schema.field(name).type
        if current.copy(nullable=True) != dtype.copy(nullable=True):
            changes.append(UpdateColumnType(name, dtype.copy(nullable=current.nullable)))
        primary_key = name in table.schema.primary_keys
        if current.nullable != dtype.nullable and not (primary_key and dtype.nullable):
            changes.append(update_column_nullability(name, dtype.nullable))
        if comment is not None:
            changes.append(update_column_comment(name, comment))
        if position:
            changes.append(update_column_position(name, **position))  # type: ignore[arg-type]
    return changes


def _alter_column(cur: Cursor) -> list[SchemaChange]:
    """Spark's ALTER [COLUMN] c {TYPE T | SET NOT NULL | DROP NOT NULL | COMMENT 'x' | FIRST | AFTER x |
    SET DEFAULT literal | DROP DEFAULT}."""
    cur.accept("COLUMN")
    name = cur.name("a column name")
    if cur.accept("TYPE"):
        return [update_column_type(name, parse_type(cur))]
    if cur.accept("SET", "NOT", "NULL"):
        return [update_column_nullability(name, False)]
    if cur.accept("DROP", "NOT", "NULL"):
        return [update_column_nullability(name, True)]
    if cur.accept("COMMENT"):
        return [update_column_comment(name, cur.string("a column comment"))]
    position = _position(cur)
    if position:
        return [update_column_position(name, **position)]  # type: ignore[arg-type]
    if cur.accept("SET", "DEFAULT"):
        return [update_column_default_value(name, default_literal(cur, "SET DEFAULT"))]
    if cur.accept("DROP", "DEFAULT"):
        return [update_column_default_value(name, None)]
    raise cur.error(
        "ALTER COLUMN supports TYPE t, SET NOT NULL, DROP NOT NULL, COMMENT 'x', SET DEFAULT v, DROP DEFAULT, "
        "FIRST and AFTER c"
    )




def parse_alter(cur: Cursor, table: Table) -> list[SchemaChange] | None:
    """The changes of one ALTER TABLE action; None for RENAME TO (the new name comes next)."""
    if cur.accept("ADD"):
        return _add(cur)
    if cur.accept("DROP"):
        return _drop(cur, table)
    if cur.accept("RENAME"):
        if cur.accept("TO"):
            return None
        cur.accept("COLUMN")
        old = cur.name("a column name")
        cur.expect("TO")
        return [rename_column(old, cur.name("a new column name"))]
    if cur.accept("MODIFY"):
        return _modify(cur, table)
    if cur.accept("ALTER"):
        return _alter_column(cur)
    if cur.accept("CHANGE"):
        raise UnsupportedError(
            "ALTER TABLE ... CHANGE COLUMN is not supported; use RENAME COLUMN, "
            "ALTER COLUMN ... TYPE, or MODIFY"
        )
    if cur.accept("SET", "TBLPROPERTIES") or cur.accept("SET"):
        return _set_options(parse_key_values(cur.group(), what="ALTER TABLE ... SET"))
    if cur.accept("RESET"):
        return _reset_options(_option_keys(cur.group()))
    if cur.accept("UNSET", "TBLPROPERTIES"):
        if_exists = cur.accept("IF", "EXISTS")
        keys = _option_keys(cur.group())
        if if_exists:
            keys = [k for k in keys if k in table.schema.options or k == "comment"]
        return _reset_options(keys)
    raise cur.error("ALTER TABLE supports ADD, DROP, RENAME, MODIFY, ALTER COLUMN, SET, RESET and RENAME TO")


def alter(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 1)
    if not cur.accept("TABLE"):
        what = stmt.words(2)[1] if len(stmt.tokens) > 1 else ""
        raise UnsupportedError(f"ALTER {what} is not supported (only ALTER TABLE)".replace("  ", " "))
    if_exists = cur.accept("IF", "EXISTS")
    name = ctx.name(cur.qualified(), allow_system=False)
    if if_exists and not ctx.catalog.table_exists(name.identifier):
        return Result("alter table", stmt.text, message=f"table {name} does not exist")
    table = ctx.table(name)
    dropping = parse_drop_partitions(cur)
    if dropping is not None:
        return drop_partition_result(stmt, table, *dropping)
    parsed = parse_alter(cur, table)
    if parsed is None:
        parts = cur.qualified("a new table name")
        cur.end()
        # an unqualified new name stays in the table's database (a rename is not a move)
        target = ctx.name([name.database, *parts] if len(parts) == 1 else parts, allow_system=False)
        ctx.catalog.rename_table(name.identifier, target.identifier)
        return Result("alter table", stmt.text, message=f"renamed table {name} to {target}")
    cur.end()
    if not parsed:
        return Result("alter table", stmt.text, message=f"table {name} unchanged")
    altered = ctx.catalog.alter_table(name.identifier, *parsed) or table  # the catalog records the change
    changed = altered.schema.id != table.schema.id
    message = f"altered table {name} (schema {altered.schema.id})" if changed else f"table {name} unchanged"
    return Result("alter table", stmt.text, message=message)
