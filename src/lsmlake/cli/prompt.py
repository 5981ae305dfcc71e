"""The interactive SQL prompt: line editing, history and completion (prompt_toolkit) on a terminal,
``help`` and ``\\x`` (vertical rows), and statements run as soon as a ``;`` ends them."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from lsmlake.catalog import Catalog
from lsmlake.cli.output import Printer
from lsmlake.cli.progress import working
from lsmlake.core.sql_lexer import split_statements, tokenize
from lsmlake.errors import SqlError
from lsmlake.sql import Session
from lsmlake.sql.common import short
from lsmlake.sql.procedures import PROCEDURES

HISTORY_ENV = "LSMLAKE_HISTORY"
"""The history file of the prompt (default ``~/.lsmlake_history``)."""

HELP = """Statements (end each with ;):
  SELECT ... FROM t [VERSION AS OF n | FOR SYSTEM_TIME AS OF '...']   also system tables: `t$snapshots`, `t$files`, ...
  INSERT INTO t VALUES (...) | SELECT ...    INSERT OVERWRITE t ...
  UPDATE t SET c = v WHERE ...    DELETE FROM t WHERE ...    MERGE INTO t USING s ON ... WHEN ...
  CREATE DATABASE d    CREATE TABLE t (..., PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4')
  ALTER TABLE t ...    DROP TABLE t    DROP DATABASE d    TRUNCATE TABLE t
  SHOW DATABASES | TABLES | CREATE TABLE t    DESCRIBE t    USE d    EXPLAIN SELECT ...
  COPY (SELECT ...) TO 'out.parquet' | 'out.csv' [(FORMAT parquet|csv)]
  CALL sys.compact(table => 't') and the other procedures:
{procedures}
Prompt commands: help, \\x (one block per row, on/off), exit (or quit, \\q, Ctrl-D); Ctrl-C drops the line."""

_KEYWORD_TEXT = (
    "SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT JOIN LEFT RIGHT FULL INNER ON AS AND OR NOT NULL IS IN "
    "INSERT INTO OVERWRITE VALUES UPDATE SET DELETE MERGE USING WHEN MATCHED THEN CREATE DATABASE TABLE "
    "PRIMARY KEY ENFORCED WITH ALTER ADD DROP COLUMN RENAME TO TRUNCATE SHOW TABLES DATABASES DESCRIBE "
    "USE EXPLAIN COPY FORMAT CALL VERSION SYSTEM_TIME OF COUNT DISTINCT"
)
KEYWORDS = tuple(_KEYWORD_TEXT.split())


def help_text() -> str:
    names = ", ".join(sorted(PROCEDURES))
    return HELP.format(procedures=textwrap.fill(names, width=100, initial_indent="    ", subsequent_indent="    "))


def statement_complete(text: str) -> bool:
    """Whether ``text`` ends with a ``;`` outside strings and comments (the prompt then runs it)."""
    try:
        tokens = tokenize(text)
    except SqlError:
        return False
    return bool(tokens) and tokens[-1].kind == "op" and tokens[-1].value == ";"


def completion_words(catalog: Catalog) -> list[str]:
    """Keywords, procedures, databases and ``db.table`` names the prompt completes."""
    words = [*KEYWORDS, *(f"sys.{p}" for p in PROCEDURES)]
    for database in catalog.list_databases():
        words.append(database)
        words.extend(f"{database}.{t}" for t in catalog.list_tables(database))
    return words


def terminal_reader(words: Iterable[str]) -> Callable[[str], str]:
    """A prompt_toolkit line reader with a history file and completion (Tab) of ``words``."""
    # loaded when a prompt opens: a script, a pipe or `lsmlake --help` does not pay for it
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory

    history = Path(os.environ.get(HISTORY_ENV) or Path.home() / ".lsmlake_history")
    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(history)),
        completer=WordCompleter(list(words), ignore_case=True, WORD=True),
    )
    return session.prompt


def run_statements(session: Session, text: str, printer: Printer) -> None:
    """Run each statement of ``text`` (a spinner on a terminal while it works) and print its result."""
    for stmt in split_statements(text):
        with working(short(stmt.text)):
            result = session.execute_statement(stmt)
        printer.result(result)


def _command(line: str) -> str | None:
    """A prompt command (``exit``, ``help``, ``\\x``) typed on a line of its own, or None."""
    word = line.strip().rstrip(";").strip().lower()
    if word in ("exit", "quit", "\\q"):
        return "exit"
    if word in ("help", "\\?", "\\h", "?"):
        return "help"
    return "vertical" if word == "\\x" else None


def repl(
    session: Session,
    printer: Printer,
    report: Callable[[BaseException], bool],
    read: Callable[[str], str],
    echo: Callable[[str], None],
) -> None:
    """Read statements until ``exit``/EOF; each complete statement runs at once. An error that
    ``report`` prints (it returns False for a bug, which is raised) does not stop the prompt."""
    buffer: list[str] = []
    while True:
        try:
            line = read(f"{session.database}> " if not buffer else "... ")
        except EOFError:
            break
        except KeyboardInterrupt:
            buffer = []
            continue
        command = None if buffer else _command(line)
        if command == "exit":
            break
        if command == "help":
            echo(help_text())
            continue
        if command == "vertical":
            printer.vertical = None if printer.vertical else True
            echo("vertical rows on" if printer.vertical else "vertical rows off (on by itself when too wide)")
            continue
        buffer.append(line)
        text = "\n".join(buffer)
        if not statement_complete(text):
            continue
        buffer = []
        try:
            run_statements(session, text, printer)
        except KeyboardInterrupt:
            echo("interrupted")
        except Exception as e:
            if not report(e):
                raise
