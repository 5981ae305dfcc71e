"""A small SQL lexer: splits a script into statements, reads `/*+ OPTIONS(..) */` hints, and rewrites
Flink-style text (``''`` escapes, ``"quoted"`` and ``t$files`` identifiers) into text sqlglot's Spark
dialect reads the same way."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lsmlake.core.redact import MASK, follows_secret_key
from lsmlake.errors import SqlError

HINT_MARKER = "__lsmlake_hint_"
"""Appended (with a number) to a table name that carried an OPTIONS hint, so the hint survives parsing."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_OPS = ("=>", "<=", ">=", "<>", "!=", "||", "::", "==")


@dataclass(frozen=True)
class Token:
    """One lexeme. ``value`` is the unquoted identifier, the unescaped string, or the text itself."""

    kind: str  # word | ident | string | number | op | hint
    value: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.value.upper() in words

    @property
    def is_name(self) -> bool:
        return self.kind in ("word", "ident")


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text, its tokens, and its 1-based position in the script."""

    text: str
    tokens: tuple[Token, ...]
    number: int
    line: int

    @property
    def keyword(self) -> str:
        first = self.tokens[0]
        return first.value.upper() if first.kind == "word" else first.value

    def words(self, count: int) -> list[str]:
        """The first ``count`` tokens in upper case (for dispatch)."""
        return [t.value.upper() for t in self.tokens[:count]]


def _quoted(text: str, pos: int, quote: str) -> tuple[str, int]:
    """The body of a quoted run starting at ``pos`` (doubled quotes escape), and the index after it."""
    out, i = [], pos + 1
    while True:
        j = text.find(quote, i)
        if j < 0:
            what = "string" if quote == "'" else "quoted identifier"
            snippet = MASK if follows_secret_key(text[:pos]) else repr(text[pos : pos + 30])
            raise SqlError(f"unterminated {what} starting at offset {pos}: {snippet}")
        out.append(text[i:j])
        if text.startswith(quote * 2, j):
            out.append(quote)
            i = j + 2
            continue
        return "".join(out), j + 1


def tokenize(text: str) -> list[Token]:
    """Tokens of ``text``; comments and whitespace are dropped, `/*+ ... */` hints kept."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise SqlError(f"unterminated comment starting at offset {i}")
            if text.startswith("/*+", i):
                tokens.append(Token("hint", text[i + 3 : j].strip(), i, j + 2))
            i = j + 2
        elif c in "'`\"":
            body, j = _quoted(text, i, c)
            tokens.append(Token("string" if c == "'" else "ident", body, i, j))
            i = j
        elif (m := _NUMBER.match(text, i)) and (c.isdigit() or c == "."):
            tokens.append(Token("number", m.group(0), i, m.end()))
            i = m.end()
        elif m := _WORD.match(text, i):
            tokens.append(Token("word", m.group(0), i, m.end()))
            i = m.end()
        else:
            op = next((o for o in _OPS if text.startswith(o, i)), c)
            tokens.append(Token("op", op, i, i + len(op)))
            i += len(op)
    return tokens


def split_statements(text: str) -> list[Statement]:
    """The non-empty ``;``-separated statements of a script."""
    out: list[Statement] = []
    current: list[Token] = []
    for tok in [*tokenize(text), Token("op", ";", len(text), len(text))]:
        if tok.kind == "op" and tok.value == ";":
            if current:
                start, end = current[0].start, current[-1].end
                line = text.count("\n", 0, start) + 1
                out.append(Statement(text[start:end], tuple(current), len(out) + 1, line))
            current = []
        else:
            current.append(tok)
    return out


# --------------------------------------------------------------------------- hints


def parse_hint(body: str) -> dict[str, str]:
    """The key/value pairs of an ``OPTIONS('k'='v', ...)`` hint body."""
    toks = tokenize(body)
    if len(toks) < 3 or not toks[0].is_word("OPTIONS") or toks[1].value != "(" or toks[-1].value != ")":
        raise SqlError(f"unsupported hint /*+ {body} */: only OPTIONS('key'='value', ...) is supported")
    return parse_key_values(toks[2:-1], what=f"hint /*+ {body} */")


def parse_key_values(toks: list[Token] | tuple[Token, ...], *, what: str) -> dict[str, str]:
    """``'k' = 'v', ...`` tokens as a dict (values may also be numbers or TRUE/FALSE)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(toks):
        part = toks[i : i + 3]
        if (
            len(part) < 3
            or part[0].kind != "string"
            or part[1].value != "="
            or part[2].kind not in ("string", "number", "word")
        ):
            raise SqlError(f"{what}: expected 'key' = 'value' pairs")
        out[part[0].value] = part[2].value.lower() if part[2].kind == "word" else part[2].value
        i += 3
        if i < len(toks):
            if toks[i].value != ",":
                raise SqlError(f"{what}: expected ',' between options, got {toks[i].value!r}")
            i += 1
    return out


@dataclass
class Rewritten:
    """Statement text for sqlglot's Spark dialect, and the OPTIONS hints keyed by their table marker."""

    text: str
    hints: dict[str, dict[str, str]] = field(default_factory=dict)


def _spark_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _backquote(value: str) -> str:
    return "`" + value.replace("`", "``") + "`"


def rewrite_for_sqlglot(stmt: Statement, tokens: tuple[Token, ...] | None = None) -> Rewritten:
    """Re-emit tokens so Spark-dialect sqlglot reads them as Flink would (see the module docstring)."""
    toks = stmt.tokens if tokens is None else tokens
    base = stmt.tokens[0].start
    parens = _constructor_brackets(toks)
    pieces: list[str] = []
    hints: dict[str, dict[str, str]] = {}
    previous_end = toks[0].start if toks else base
    for k, tok in enumerate(toks):
        gap = " " if tok.start > previous_end else ""
        previous_end = tok.end
        if tok.kind == "hint":
            if k == 0 or not toks[k - 1].is_name:
                raise SqlError(f"hint /*+ {tok.value} */ must follow a table name")
            marker = f"{HINT_MARKER}{len(hints)}"
            hints[marker] = parse_hint(tok.value)
            pieces[-1] = pieces[-1][: len(pieces[-1]) - len(_emit(toks[k - 1]))] + _backquote(
                toks[k - 1].value + marker
            )
            continue
        pieces.append(gap + parens.get(k, _emit(tok)))
    return Rewritten("".join(pieces), hints)


def _constructor_brackets(toks: tuple[Token, ...]) -> dict[int, str]:
    """Flink's ``ARRAY[a, b]`` / ``MAP[k, v]`` become Spark's ``ARRAY(a, b)`` / ``MAP(k, v)``:
    the indices of the brackets to replace, with their replacement."""
    out: dict[int, str] = {}
    stack: list[tuple[int, bool]] = []
    for k, tok in enumerate(toks):
        if tok.kind != "op" or tok.value not in "[]":
            continue
        if tok.value == "[":
            constructor = k > 0 and toks[k - 1].is_word("ARRAY", "MAP")
            stack.append((k, constructor))
            if constructor:
                out[k] = "("
        elif stack and stack.pop()[1]:
            out[k] = ")"
    return out


def _emit(tok: Token) -> str:
    if tok.kind == "string":
        return _spark_string(tok.value)
    if tok.kind == "ident" or (tok.kind == "word" and "$" in tok.value):
        return _backquote(tok.value)
    return tok.value


def strip_hint(name: str, hints: Mapping[str, Mapping[str, str]]) -> tuple[str, dict[str, str]]:
    """A table name without its hint marker, and the hint's options (empty when there was none)."""
    pos = name.find(HINT_MARKER)
    if pos < 0:
        return name, {}
    return name[:pos], dict(hints.get(name[pos:], {}))


# --------------------------------------------------------------------------- a cursor for hand parsers


class Cursor:
    """Walks the tokens of one statement for the hand-written parsers (DDL, CALL)."""

    def __init__(self, stmt: Statement, start: int = 0) -> None:
        self.stmt = stmt
        self.toks = stmt.tokens
        self.i = start

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    @property
    def done(self) -> bool:
        return self.i >= len(self.toks)

    def error(self, message: str) -> SqlError:
        tok = self.peek()
        where = f"near {self.stmt.text[tok.start - self.toks[0].start :][:20]!r}" if tok else "at the end"
        return SqlError(f"{message} ({where})")

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of statement")
        self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume the given keyword sequence if it comes next."""
        for k, w in enumerate(words):
            tok = self.peek(k)
            if tok is None or not (tok.is_word(w) or (tok.kind == "op" and tok.value == w)):
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def name(self, what: str = "a name") -> str:
        tok = self.peek()
        if tok is None or not tok.is_name:
            raise self.error(f"expected {what}")
        self.i += 1
        return tok.value

    def qualified(self, what: str = "a table name") -> list[str]:
        parts = [self.name(what)]
        while self.accept("."):
            parts.append(self.name(what))
        return parts

    def string(self, what: str = "a string literal") -> str:
        tok = self.peek()
        if tok is None or tok.kind != "string":
            raise self.error(f"expected {what}")
        self.i += 1
        return tok.value

    def group(self) -> list[Token]:
        """The tokens inside the parentheses that come next (nested parentheses kept)."""
        self.expect("(")
        depth = 1
        out: list[Token] = []
        while True:
            tok = self.next()
            if tok.kind == "op" and tok.value == "(":
                depth += 1
            elif tok.kind == "op" and tok.value == ")":
                depth -= 1
                if depth == 0:
                    return out
            out.append(tok)

    def end(self) -> None:
        if not self.done:
            raise self.error("unexpected text after the statement")
