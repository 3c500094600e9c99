"""Go's text/template parsed into a small tree: text, actions (pipelines of commands),
`if` / `with` / `range` with their `else` branches, `break` and `continue`.

As Go's parser does, it refuses a function that is not defined and a variable used outside its
scope, naming them (`template: NAME:LINE: function "foo" not defined`). `define`, `template`
and `block` are refused with a message saying wanka does not support them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from warehouse.rules.gotemplate.lex import TemplateError, Token, lex


@dataclass
class Arg:
    """An operand: `kind` is field (on dot), var, dot, lit, nil, func or pipe; `fields` the
    `.A.B` chain after it."""

    kind: str
    value: Any = None
    fields: tuple[str, ...] = ()
    text: str = ""  # as written (Go names a failing command by its text)


@dataclass
class Command:
    args: list[Arg]
    pos: int  # where its first operand starts in the template's text
    text: str


@dataclass
class Pipe:
    decl: list[str]
    assign: bool  # `=` rather than `:=`
    cmds: list[Command]
    line: int


@dataclass
class Branch:
    kind: str  # if | with | range
    pipe: Pipe
    body: list[Any]
    otherwise: list[Any] = field(default_factory=list)


@dataclass
class Action:
    pipe: Pipe


@dataclass
class Loop:
    kind: str  # break | continue
    line: int


class _Parser:
    def __init__(self, tokens: list[Token], name: str, funcs: Collection[str]) -> None:
        self.tokens, self.pos, self.name, self.funcs = tokens, 0, name, funcs
        self.scopes: list[list[str]] = [["$"]]
        self.loops = 0

    def fail(self, why: str, line: int | None = None) -> TemplateError:
        if line is None:
            line = self.tokens[min(self.pos, len(self.tokens) - 1)].line if self.tokens else 1
        return TemplateError(f"template: {self.name}:{line}: {why}")

    def peek(self, ahead: int = 0) -> Token | None:
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise self.fail("unexpected EOF")
        self.pos += 1
        return token

    def items(self, until: tuple[str, ...] = ()) -> tuple[list[Any], str]:
        """Nodes up to an `{{end}}` / `{{else}}` (which of them, consumed) or the end."""
        nodes: list[Any] = []
        while (token := self.peek()) is not None:
            if token.kind == "text":
                nodes.append(self.next().value)
                continue
            self.next()  # {{
            word = self.peek()
            if word is not None and word.kind == "keyword":
                if word.value in ("end", "else"):
                    if word.value not in until:
                        raise self.fail(f"unexpected {{{{{word.value}}}}}", word.line)
                    self.next()
                    if word.value == "end":
                        self.expect_close()
                    return nodes, word.value
                nodes.append(self.keyword())
                continue
            nodes.append(Action(self.pipeline("command")))
        if until:
            raise self.fail("unexpected EOF")
        return nodes, ""

    def keyword(self) -> Any:
        word = self.next()
        if word.value in ("if", "with", "range"):
            return self.branch(word.value)
        if word.value in ("break", "continue"):
            if not self.loops:
                raise self.fail(f"{{{{{word.value}}}}} outside {{{{range}}}}", word.line)
            self.expect_close()
            return Loop(word.value, word.line)
        raise self.fail(f"wanka does not support {{{{{word.value}}}}} in rule templates", word.line)

    def branch(self, kind: str) -> Branch:
        self.scopes.append([])
        pipe = self.pipeline(kind)
        if kind == "range":
            self.loops += 1
        body, ended = self.items(("end", "else"))
        if kind == "range":
            self.loops -= 1
        otherwise: list[Any] = []
        if ended == "else":
            following = self.peek()
            if (
                following is not None
                and following.kind == "keyword"
                and (following.value in ("if", "with") and kind != "range")
            ):
                self.next()
                otherwise = [self.branch(following.value)]
            else:
                self.expect_close()
                otherwise, _ = self.items(("end",))
        self.scopes.pop()
        return Branch(kind, pipe, body, otherwise)

    def expect_close(self) -> None:
        token = self.next()
        if token.kind != "close":
            raise self.fail(f"unexpected {token.value!r} in end".replace("'", '"'), token.line)

    def pipeline(self, context: str) -> Pipe:
        line = self.tokens[self.pos - 1].line
        decl: list[str] = []
        assign = False
        # `$x :=`, `$x =`, or `$i, $v :=` (range)
        if (first := self.peek()) is not None and first.kind == "var":
            second = self.peek(1)
            if second is not None and second.kind in ("declare", "assign"):
                decl, assign = [first.value], second.kind == "assign"
                self.pos += 2
            elif second is not None and second.kind == "comma" and context == "range":
                third, fourth = self.peek(2), self.peek(3)
                if (
                    third is None
                    or third.kind != "var"
                    or fourth is None
                    or (fourth.kind not in ("declare", "assign"))
                ):
                    raise self.fail("range can only initialize variables")
                decl, assign = [first.value, third.value], fourth.kind == "assign"
                self.pos += 4
        if assign:
            for name in decl:
                self.variable(name, line)
        cmds: list[Command] = []
        while True:
            cmds.append(self.command())
            token = self.next()
            if token.kind == "close":
                break
            if token.kind != "pipe":
                raise self.fail(f"unexpected {token.value!r} in {context}".replace("'", '"'))
        if not assign:
            self.scopes[-1].extend(decl)
        return Pipe(decl, assign, cmds, line)

    def command(self) -> Command:
        args: list[Arg] = []
        start = self.peek()
        while (token := self.peek()) is not None and token.kind not in ("close", "pipe", "rparen"):
            args.append(self.operand())
        if not args or start is None:
            raise self.fail("missing value for command")
        return Command(args, start.pos, " ".join(a.text for a in args))

    def variable(self, name: str, line: int) -> None:
        if not any(name in scope for scope in self.scopes):
            raise self.fail(f'undefined variable "{name}"', line)

    def operand(self) -> Arg:
        token = self.peek()
        arg = self._operand()
        if token is not None and not arg.text:
            arg.text = token.value + "".join("." + f for f in arg.fields if arg.kind != "field")
        return arg

    def _operand(self) -> Arg:
        token = self.next()
        kind, value = token.kind, token.value
        if kind == "field":
            return Arg("field", None, tuple(value[1:].split(".")))
        if kind == "var":
            self.variable(value, token.line)
            return Arg("var", value, self.fields())
        if kind == "dot":
            return Arg("dot")
        if kind == "nil":
            return Arg("nil")
        if kind == "bool":
            return Arg("lit", value == "true")
        if kind == "string":
            return Arg("lit", _unquote(value, self, token.line))
        if kind == "char":
            return Arg("lit", ord(_unquote('"' + value[1:-1] + '"', self, token.line)))
        if kind == "number":
            return Arg("lit", _number(value, self, token.line))
        if kind == "ident":
            if value not in self.funcs:
                raise self.fail(f'function "{value}" not defined', token.line)
            return Arg("func", value)
        if kind == "lparen":
            inner = self.inner_pipeline()
            fields = self.fields()
            text = "(" + " | ".join(c.text for c in inner.cmds) + ")"
            return Arg("pipe", inner, fields, text + "".join("." + f for f in fields))
        raise self.fail(f"unexpected {value!r} in operand".replace("'", '"'), token.line)

    def fields(self) -> tuple[str, ...]:
        token = self.peek()
        if token is not None and token.kind == "field":
            self.next()
            return tuple(token.value[1:].split("."))
        return ()

    def inner_pipeline(self) -> Pipe:
        line = self.tokens[self.pos - 1].line
        cmds = [self.command()]
        while (token := self.next()).kind == "pipe":
            cmds.append(self.command())
        if token.kind != "rparen":
            raise self.fail("unclosed left paren", line)
        return Pipe([], False, cmds, line)


def _unquote(text: str, parser: _Parser, line: int) -> str:
    if text.startswith("`"):
        return text[1:-1]
    try:
        decoded: str = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return decoded
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise parser.fail(f"bad syntax: {text}", line) from None


def _number(text: str, parser: _Parser, line: int) -> int | float:
    clean = text.replace("_", "")
    try:
        if any(c in clean for c in ".eE") and not clean.lower().startswith(("0x", "-0x", "+0x")):
            return float(clean)
        return int(clean, 0)
    except ValueError:
        raise parser.fail(f"bad number syntax: {text!r}".replace("'", '"'), line) from None


def parse(text: str, name: str, funcs: Collection[str]) -> list[Any]:
    """The tree of template `text`; TemplateError when Go's parser would refuse it."""
    parser = _Parser(lex(text, name), name, funcs)
    nodes, _ = parser.items()
    return nodes
