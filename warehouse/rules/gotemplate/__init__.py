"""Go's text/template, the subset Prometheus 2.42's rule templates use: `lex` splits a text
into text and action tokens, `parse` builds the tree (refusing undefined functions and
variables as Go does), `execute` runs it, `funcs` holds Go's builtins and Prometheus's
functions, `gofmt` prints values as Go's fmt does.

`check` is what `promtool check rules` does to an alerting rule's labels and annotations (parse
only); `expand` what Prometheus does at each evaluation. Both put Prometheus's variables first
(`$labels`, `$externalLabels`, `$externalURL`, `$value`) and name the template `__alert_NAME`.

>>> expand("{{ $labels.gpu }} at {{ $value | humanize }}", "Hot", {"gpu": "3"}, {}, "", 91234.5)
'3 at 91.23k'
>>> check("{{ nope 1 }}", "Hot")
Traceback (most recent call last):
...
warehouse.rules.gotemplate.lex.TemplateError: template: __alert_Hot:1: function "nope" not defined
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from warehouse.rules.gotemplate import execute, funcs, parse
from warehouse.rules.gotemplate.funcs import Sample
from warehouse.rules.gotemplate.lex import TemplateError

__all__ = ["Sample", "TemplateError", "check", "expand"]

_DEFS = (
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}"
    "{{$externalURL := .ExternalURL}}{{$value := .Value}}"
)
_KNOWN = funcs.NAMES | funcs.UNSUPPORTED


@functools.lru_cache(maxsize=4096)
def _tree(text: str, name: str) -> list[Any]:
    nodes = parse.parse(_DEFS + text, name, _KNOWN)
    _refuse_unsupported(nodes, name)
    return nodes


def _refuse_unsupported(nodes: list[Any], name: str) -> None:
    def pipes(node: Any) -> list[parse.Pipe]:
        if isinstance(node, parse.Action):
            return [node.pipe]
        if isinstance(node, parse.Branch):
            return [node.pipe, *(p for n in node.body + node.otherwise for p in pipes(n))]
        return []

    def args(pipe: parse.Pipe) -> list[parse.Arg]:
        found = []
        for cmd in pipe.cmds:
            for arg in cmd.args:
                found.append(arg)
                if arg.kind == "pipe":
                    found.extend(args(arg.value))
        return found

    for node in nodes:
        for pipe in pipes(node):
            for arg in args(pipe):
                if arg.kind == "func" and arg.value in funcs.UNSUPPORTED:
                    raise TemplateError(
                        f'template: {name}:{pipe.line}: function "{arg.value}" is defined by '
                        "Go's templates but not supported by wanka"
                    )


def check(text: str, rule: str) -> None:
    """Parse `text` as the template of alerting rule `rule`; TemplateError when it cannot be."""
    _tree(text, f"__alert_{rule}")


def expand(
    text: str,
    rule: str,
    labels: dict[str, str],
    external_labels: dict[str, str],
    external_url: str,
    value: float,
    query: Callable[[str], list[Sample]] | None = None,
) -> str:
    """`text` expanded for one alert; TemplateError when it fails."""
    name = f"__alert_{rule}"
    data = {
        "Labels": labels,
        "ExternalLabels": external_labels,
        "ExternalURL": external_url,
        "Value": value,
    }
    table = funcs.functions(query or (lambda _: []), external_url)
    try:
        return execute.run(_tree(text, name), name, table, data, _DEFS + text)
    except TemplateError as error:
        raise TemplateError(f"error executing template {name}: {error}") from None
