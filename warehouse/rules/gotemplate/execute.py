"""A parsed template run over its data, as Go's text/template runs it with Prometheus's
`missingkey=zero`: a missing label is the empty string.

An error while running is a TemplateError worded as Go's (`template: NAME:LINE: executing
"NAME" at <humanize>: error calling humanize: ...`); the rule evaluator turns it into
`<error expanding template: ...>` as Prometheus does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from warehouse.rules.gotemplate import gofmt
from warehouse.rules.gotemplate.funcs import CallError, truth
from warehouse.rules.gotemplate.lex import TemplateError
from warehouse.rules.gotemplate.parse import Action, Arg, Branch, Command, Loop, Pipe

_NO_VALUE = object()


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Runner:
    def __init__(
        self, name: str, funcs: dict[str, Callable[..., Any]], data: Any, source: str = ""
    ) -> None:
        self.name, self.funcs, self.data, self.source = name, funcs, data, source
        self.at: Command | None = None  # the command being run, for errors
        self.scopes: list[dict[str, Any]] = [{"$": data}]
        self.out: list[str] = []

    def fail(self, line: int, at: str, why: str) -> TemplateError:
        """Go's ExecError: `template: NAME:LINE:COL: executing "NAME" at <COMMAND>: why`."""
        where, text = f"{line}", at
        if self.at is not None:
            pos = self.at.pos
            line = self.source.count("\n", 0, pos) + 1
            where = f"{line}:{pos - self.source.rfind(chr(10), 0, pos) - 1}"
            text = self.at.text
        return TemplateError(
            f'template: {self.name}:{where}: executing "{self.name}" at <{text}>: {why}'
        )

    def run(self, nodes: list[Any], dot: Any) -> None:
        for node in nodes:
            if isinstance(node, str):
                self.out.append(node)
            elif isinstance(node, Action):
                value = self.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    self.out.append(gofmt.sprint(value))
            elif isinstance(node, Branch):
                self.branch(node, dot)
            elif isinstance(node, Loop):
                raise _Break() if node.kind == "break" else _Continue()

    def branch(self, node: Branch, dot: Any) -> None:
        self.scopes.append({})
        try:
            if node.kind == "range":
                self.range(node, dot)
                return
            value = self.pipe(node.pipe, dot, declare=node.kind != "range")
            if truth(value):
                self.run(node.body, value if node.kind == "with" else dot)
            else:
                self.run(node.otherwise, dot)
        finally:
            self.scopes.pop()

    def range(self, node: Branch, dot: Any) -> None:
        value = self.pipe(node.pipe, dot, declare=False)
        if isinstance(value, dict):
            items = sorted(value.items())
        elif isinstance(value, (list, str)):
            items = list(enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            items = [(i, i) for i in range(value)]
        elif value is None:
            items = []
        else:
            raise self.fail(
                node.pipe.line, "range", f"range can't iterate over {gofmt.sprint(value)}"
            )
        if not items:
            self.run(node.otherwise, dot)
            return
        for key, item in items:
            decl = node.pipe.decl
            if len(decl) == 1:
                self.set(decl[0], item, node.pipe.assign)
            elif len(decl) == 2:
                self.set(decl[0], key, node.pipe.assign)
                self.set(decl[1], item, node.pipe.assign)
            try:
                self.run(node.body, item)
            except _Break:
                break
            except _Continue:
                continue

    def set(self, name: str, value: Any, assign: bool) -> None:
        if assign:
            for scope in reversed(self.scopes):
                if name in scope:
                    scope[name] = value
                    return
        self.scopes[-1][name] = value

    def pipe(self, pipe: Pipe, dot: Any, declare: bool = True) -> Any:
        value: Any = _NO_VALUE
        for cmd in pipe.cmds:
            value = self.command(cmd, dot, value, pipe.line)
        if declare:
            for name in pipe.decl:
                self.set(name, value, pipe.assign)
        return value

    def command(self, cmd: Command, dot: Any, last: Any, line: int) -> Any:
        outer, self.at = self.at, cmd
        try:
            return self._command(cmd.args, dot, last, line)
        finally:
            self.at = outer

    def _command(self, args: list[Arg], dot: Any, last: Any, line: int) -> Any:
        head = args[0]
        if head.kind == "func":
            return self.call(head.value, args[1:], dot, last, line)
        if len(args) > 1 or last is not _NO_VALUE:
            raise self.fail(line, self.describe(head), "can't give argument to non-function")
        return self.operand(head, dot, line)

    def call(self, name: str, args: list[Arg], dot: Any, last: Any, line: int) -> Any:
        if name in ("and", "or"):
            # evaluated one at a time, stopping at the first that decides (Go 1.18 on)
            values: list[Callable[[], Any]] = [
                functools.partial(self.operand, a, dot, line) for a in args
            ]
            if last is not _NO_VALUE:
                values.append(functools.partial(lambda v: v, last))
            if not values:
                raise self.fail(
                    line, name, f"wrong number of args for {name}: want at least 1 got 0"
                )
            result: Any = None
            for get in values:
                result = get()
                if truth(result) != (name == "and"):
                    return result
            return result
        given = [self.operand(a, dot, line) for a in args]
        if last is not _NO_VALUE:
            given.append(last)
        try:
            return self.funcs[name](*given)
        except CallError as error:
            raise self.fail(line, name, f"error calling {name}: {error}") from None
        except TemplateError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
            raise self.fail(line, name, f"error calling {name}: {error}") from None

    def operand(self, arg: Arg, dot: Any, line: int) -> Any:
        if arg.kind == "lit":
            return arg.value
        if arg.kind == "nil":
            return None
        if arg.kind == "dot":
            return dot
        if arg.kind == "func":
            return self.call(arg.value, [], dot, _NO_VALUE, line)
        if arg.kind == "var":
            base = next(s[arg.value] for s in reversed(self.scopes) if arg.value in s)
        elif arg.kind == "pipe":
            base = self.pipe(arg.value, dot, declare=False)
        else:
            base = dot
        for name in arg.fields:
            base = self.field(base, name, line, arg)
        return base

    def field(self, base: Any, name: str, line: int, arg: Arg) -> Any:
        if isinstance(base, dict):
            return base.get(name, "" if all(isinstance(v, str) for v in base.values()) else None)
        if hasattr(base, name) and name[:1].isupper():
            return getattr(base, name)
        if base is None:
            raise self.fail(
                line, self.describe(arg), f"nil pointer evaluating interface {{}}.{name}"
            )
        raise self.fail(
            line, self.describe(arg), f"can't evaluate field {name} in type {gofmt.go_type(base)}"
        )

    @staticmethod
    def describe(arg: Arg) -> str:
        base = {"var": str(arg.value), "dot": ".", "field": ""}.get(arg.kind, str(arg.value))
        return base + "".join("." + f for f in arg.fields)


def run(
    nodes: list[Any], name: str, funcs: dict[str, Callable[..., Any]], data: Any, source: str = ""
) -> str:
    """The text of `nodes` (parsed from `source`) run over `data`; TemplateError when a step
    fails."""
    runner = Runner(name, funcs, data, source)
    with contextlib.suppress(_Break, _Continue):
        runner.run(nodes, data)
    return "".join(runner.out)
