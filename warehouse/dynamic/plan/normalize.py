"""Rewrite step: make GROUP BY name its expressions (ordinals, output aliases, ALL resolved).

Later steps compare grouped expressions with projected ones, so `GROUP BY 1`, `GROUP BY hour`
(an alias) and `GROUP BY ALL` all become the expressions themselves.
"""

from __future__ import annotations

from sqlglot import exp


def _unaliased(item: exp.Expression) -> exp.Expression:
    return item.this if isinstance(item, exp.Alias) else item


def normalize_group_by(select: exp.Select) -> exp.Select:
    """Return a copy of `select` whose GROUP BY lists expressions, not ordinals or aliases.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT date_trunc('hour', ts) AS h, count(*) FROM t GROUP BY 1")
    >>> normalize_group_by(q).sql()
    "SELECT DATE_TRUNC('HOUR', ts) AS h, COUNT(*) FROM t GROUP BY DATE_TRUNC('HOUR', ts)"
    """
    select = select.copy()
    group = select.args.get("group")
    if group is None:
        return select
    items = select.expressions
    aliases = {i.alias: _unaliased(i) for i in items if isinstance(i, exp.Alias)}
    if group.args.get("all") or _is_group_all(group):
        keys = [_unaliased(i).copy() for i in items if not _has_aggregate(_unaliased(i))]
        select.set("group", exp.Group(expressions=keys))
        return select
    keys = []
    for key in group.expressions:
        if isinstance(key, exp.Literal) and not key.is_string:
            keys.append(_unaliased(items[int(key.this) - 1]).copy())
        elif isinstance(key, exp.Column) and not key.table and key.name in aliases:
            keys.append(aliases[key.name].copy())
        else:
            keys.append(key)
    select.set("group", exp.Group(expressions=keys))
    return select


def _is_group_all(group: exp.Group) -> bool:
    keys = group.expressions
    return len(keys) == 1 and isinstance(keys[0], exp.Column) and keys[0].name.upper() == "ALL"


def _has_aggregate(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.AggFunc) for n in node.walk())
