"""Where a name, an operator or a literal first stands in the SQL a client sent.

PostgreSQL's error `position` points at the token that failed, counted in characters from 1 in
the client's query string. wanka runs a rewritten text, so DuckDB's own offsets do not apply:
the spot is found again here, by tokenizing the client's text (sqlglot, PostgreSQL dialect).
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

#: Tokens after which an operator is binary (an operand ends there).
_OPERAND_ENDS = frozenset(
    {
        TokenType.VAR,
        TokenType.IDENTIFIER,
        TokenType.NUMBER,
        TokenType.STRING,
        TokenType.R_PAREN,
        TokenType.R_BRACKET,
        TokenType.NULL,
        TokenType.TRUE,
        TokenType.FALSE,
    }
)
#: DuckDB's names for operators that PostgreSQL spells as keywords in the text.
_SPELLED = {"~~": "like", "!~~": "not", "~~*": "ilike", "!~~*": "not"}


@functools.lru_cache(maxsize=256)
def _tokens(sql: str) -> tuple[Token, ...]:
    try:
        return tuple(sqlglot.Dialect.get_or_raise("postgres").tokenize(sql))
    except SqlglotError:
        return ()


class Spots:
    """The tokens of `sql` from character `start` on (a statement within a longer text).

    Positions are PostgreSQL's: 1-based character offsets in the whole of `sql`.

    >>> Spots("select a from t; select t.b + 1 from t", start=17).identifier("t")
    38
    """

    def __init__(self, sql: str, start: int = 0) -> None:
        tokens = [t for t in _tokens(sql) if t.start >= start]
        end = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON), None)
        self.tokens = tokens[:end]  # this statement's, not the next one's
        stop = tokens[end].start if end is not None else len(sql)
        self.statement = sql[start:stop]

    def _at(self, index: int) -> Token | None:
        return self.tokens[index] if 0 <= index < len(self.tokens) else None

    def _is(self, index: int, kind: TokenType) -> bool:
        token = self._at(index)
        return token is not None and token.token_type == kind

    def _names(self, name: str) -> list[int]:
        """Indexes of the tokens that spell `name` as an identifier (not a string literal)."""
        return [
            i
            for i, t in enumerate(self.tokens)
            if t.token_type != TokenType.STRING and t.text.lower() == name.lower()
        ]

    def identifier(self, name: str) -> int | None:
        """The first unqualified use of `name` (not next to a dot, not a function call).

        >>> Spots("select t.n, n from t").identifier("n")
        13
        """
        for i in self._names(name):
            if not any(
                (self._is(i - 1, TokenType.DOT), self._is(i + 1, TokenType.DOT))
            ) and not self._is(i + 1, TokenType.L_PAREN):
                return self.tokens[i].start + 1
        return None

    def quoted(self, name: str) -> bool:
        """Whether the first use of `name` is a quoted identifier (its case then kept)."""
        spots = self._names(name)
        return bool(spots) and self.tokens[spots[0]].token_type == TokenType.IDENTIFIER

    def qualified(self, qualifier: str, name: str | None = None) -> int | None:
        """The first `qualifier.name` (or `qualifier.` anything): where the qualifier starts.

        >>> Spots("select x.a from t").qualified("x", "a")
        8
        """
        for i in self._names(qualifier):
            after = self._at(i + 2)
            named = after is not None and (name is None or after.text.lower() == name.lower())
            if self._is(i + 1, TokenType.DOT) and named:
                return self.tokens[i].start + 1
        return None

    def qualified_text(self, name: str) -> str | None:
        """`schema.name` as written when the first `name` is qualified, else None."""
        for i in self._names(name):
            if self._is(i - 1, TokenType.DOT) and (before := self._at(i - 2)) is not None:
                return f"{before.text}.{self.tokens[i].text}"
        return None

    def relation(self, name: str) -> int | None:
        """The first use of `name` as a table, with its schema when it has one."""
        for i in self._names(name):
            if self._is(i - 1, TokenType.DOT) and (before := self._at(i - 2)) is not None:
                return before.start + 1
            if not self._is(i + 1, TokenType.DOT) and not self._is(i + 1, TokenType.L_PAREN):
                return self.tokens[i].start + 1
        return None

    def function(self, name: str) -> int | None:
        """The first call of `name(`.

        >>> Spots("select f, f(1)").function("f")
        11
        """
        for i in self._names(name):
            if self._is(i + 1, TokenType.L_PAREN):
                return self.tokens[i].start + 1
        return None

    def operator(self, symbol: str, *, unary: bool = False) -> int | None:
        """The first binary (or prefix, `unary`) use of an operator.

        >>> Spots("select -n, n - 1").operator("-")
        14
        """
        spelled = _SPELLED.get(symbol, symbol)
        for i, token in enumerate(self.tokens):
            if token.text.lower() not in (symbol, spelled):
                continue
            before = self._at(i - 1)
            binary = before is not None and before.token_type in _OPERAND_ENDS
            if binary != unary:
                return token.start + 1
        return None

    def string(self, value: str) -> int | None:
        """The first string literal holding `value`.

        >>> Spots("select 'a' < 1").string("a")
        8
        """
        for token in self.tokens:
            if token.token_type == TokenType.STRING and token.text == value:
                return token.start + 1
        return None

    def token(self, text: str) -> int | None:
        """The first token spelled `text` (any kind)."""
        for token in self.tokens:
            if token.text.lower() == text.lower():
                return token.start + 1
        return None

    def first(self) -> str:
        """The statement's first word, in lower case ('' when it has none)."""
        return self.tokens[0].text.lower() if self.tokens else ""

    def after(self, word: str) -> str | None:
        """The table named after the first `word` (`update`, `table`), without its schema.

        >>> Spots("update main.t as x set a = 1").after("update")
        't'
        """
        for i, token in enumerate(self.tokens):
            if token.text.lower() != word:
                continue
            j = i + 1
            while self._is(j + 1, TokenType.DOT):
                j += 2
            name = self._at(j)
            return name.text if name is not None else None
        return None

    def term(self, clause: str, count: int) -> tuple[int, int] | None:
        """The first `clause` BY position past `count` (a number, not a column): (it, where).

        >>> Spots("select a from t order by 1, 7").term("order", 1)
        (7, 29)
        """
        kind = TokenType.ORDER_BY if clause == "order" else TokenType.GROUP_BY
        inside = False
        for i, token in enumerate(self.tokens):
            if token.token_type == kind:
                inside = True
            elif inside and token.token_type == TokenType.NUMBER and token.text.isdigit():
                after_list = self._is(i - 1, kind) or self._is(i - 1, TokenType.COMMA)
                if after_list and not 1 <= int(token.text) <= count:
                    return int(token.text), token.start + 1
        return None

    def membership(self) -> int | None:
        """The first IN, NOT IN, or comparison before ANY/ALL/SOME: where it starts.

        >>> Spots("select 1 from t where n not in (select s from t)").membership()
        25
        """
        for i, token in enumerate(self.tokens):
            word = token.text.lower()
            nxt = (self._at(i + 1) or token).text.lower()
            if word == "in" and not self._is(i - 1, TokenType.NOT):
                return token.start + 1
            if (word == "not" and nxt == "in") or nxt in ("any", "all", "some"):
                return token.start + 1
        return None

    def last(self) -> str | None:
        """The text of the statement's last token."""
        return self.tokens[-1].text if self.tokens else None

    def end(self) -> int:
        """One past the last token: where PostgreSQL puts 'end of input'."""
        return self.tokens[-1].end + 2 if self.tokens else 1

    def call_args(self, name: str) -> list[list[Token]] | None:
        """The tokens of each argument of the first call of `name`, or None when there is none.

        >>> [[t.text for t in arg] for arg in Spots("select f(1, 'a'::text)").call_args("f")]
        [['1'], ['a', '::', 'text']]
        """
        for i in self._names(name):
            if not self._is(i + 1, TokenType.L_PAREN):
                continue
            args: list[list[Token]] = [[]]
            depth = 0
            for token in self.tokens[i + 2 :]:
                if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
                    depth += 1
                elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
                    if depth == 0:
                        return [arg for arg in args if arg]
                    depth -= 1
                elif token.token_type == TokenType.COMMA and depth == 0:
                    args.append([])
                    continue
                args[-1].append(token)
            return None
        return None

    def from_name(self) -> str | None:
        """The name the first FROM item is known by (its alias, else its table name)."""
        for i, token in enumerate(self.tokens):
            if token.token_type != TokenType.FROM:
                continue
            j = i + 1
            while self._is(j + 1, TokenType.DOT):
                j += 2
            table = self._at(j)
            if table is None or table.token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
                return None
            k = j + 2 if self._is(j + 1, TokenType.ALIAS) else j + 1
            alias = self._at(k)
            if alias is not None and alias.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
                return alias.text
            return table.text
        return None
