"""Go's text/template split into text and the tokens of its actions (`{{ ... }}`), with the
trim markers (`{{- ` and ` -}}`) and comments (`{{/* ... */}}`) as Go reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass


class TemplateError(ValueError):
    """A template that cannot be parsed or run, worded as Go words it
    (`template: NAME:LINE: why`)."""


@dataclass(frozen=True)
class Token:
    kind: str  # text | open | close | ident | field | var | string | number | char | bool
    # | nil | dot | lparen | rparen | pipe | declare | assign | comma | keyword
    value: str
    line: int
    pos: int = 0  # where it starts in the text (Go reports line:column of a failing command)


KEYWORDS = {
    "if", "else", "end", "range", "with", "define", "template", "block", "break", "continue",
}  # fmt: skip
_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<raw>`[^`]*`)
    |(?P<char>'(?:[^'\\\n]|\\.[^']*)')
    |(?P<number>[+-]?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|
        (?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9]+)?)(?:i)?)
    |(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    |(?P<var>\$[A-Za-z0-9_]*)
    |(?P<declare>:=)
    |(?P<assign>=)
    |(?P<dot>\.)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<lparen>\()
    |(?P<rparen>\))
    |(?P<pipe>\|)
    |(?P<comma>,)""",
    re.VERBOSE,
)


def lex(text: str, name: str) -> list[Token]:
    """Every token of `text`; a TemplateError naming the line of the first that is wrong."""
    tokens: list[Token] = []
    pos, line, trim_next = 0, 1, False
    while pos < len(text):
        start = text.find("{{", pos)
        chunk = text[pos:] if start < 0 else text[pos:start]
        if trim_next:
            stripped = chunk.lstrip(" \t\r\n")
            line += chunk[: len(chunk) - len(stripped)].count("\n")
            chunk, trim_next = stripped, False
        if start < 0:
            if chunk:
                tokens.append(Token("text", chunk, line))
            break
        inner = start + 2
        if (
            text.startswith("- ", inner)
            or text.startswith("-\t", inner)
            or (text.startswith("-\n", inner))
        ):
            chunk = chunk.rstrip(" \t\r\n")
            inner += 1
        if chunk:
            tokens.append(Token("text", chunk, line))
        line += text[pos:start].count("\n")
        pos, line, trim_next = _action(text, inner, line, name, tokens)
    return tokens


def _comment(text: str, pos: int, line: int, name: str) -> tuple[int, int, bool]:
    """Past a `{{/* ... */}}` comment starting at `pos`."""
    end = text.find("*/", pos)
    if end < 0:
        raise TemplateError(f"template: {name}:{line}: unclosed comment")
    after = end + 2
    trim = text.startswith(" -}}", after)
    if not trim and not text.startswith("}}", after):
        raise TemplateError(f"template: {name}:{line}: comment ends before closing delimiter")
    close = after + 4 if trim else after + 2
    return close, line + text[pos:close].count("\n"), trim


_WORDS = {"true": "bool", "false": "bool", "nil": "nil"}


def _action(text: str, pos: int, line: int, name: str, out: list[Token]) -> tuple[int, int, bool]:
    """The tokens of one action starting at `pos`; where it ends, the line, and whether it
    trims the text after it."""
    if text[pos:].lstrip(" \t\r\n").startswith("/*"):
        return _comment(text, pos, line, name)
    out.append(Token("open", "{{", line))
    while True:
        if pos >= len(text):
            raise TemplateError(f"template: {name}:{line}: unclosed action")
        if text.startswith("}}", pos):
            out.append(Token("close", "}}", line, pos))
            return pos + 2, line, False
        if text.startswith("-}}", pos) and pos > 0 and text[pos - 1] in " \t\r\n":
            out.append(Token("close", "}}", line, pos))
            return pos + 3, line, True
        found = _TOKEN.match(text, pos)
        if found is None:
            raise TemplateError(f'template: {name}:{line}: unexpected "{text[pos]}" in command')
        kind, value = found.lastgroup or "", found.group()
        if kind == "raw":
            kind = "string"
        elif kind == "ident":
            kind = _WORDS.get(value, "keyword" if value in KEYWORDS else "ident")
        if kind != "space":  # Go 1.16 on: an action may span lines
            out.append(Token(kind, value, line, pos))
        line += value.count("\n")
        pos = found.end()
