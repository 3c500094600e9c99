"""The storage side of a selector: the series a set of matchers selects, with the labels they
arrived with, and their samples and staleness markers in a time window.

gpu_metrics keeps a series as columns (wanka.gpu_series: metric, host, gpu, uuid, labels);
`warehouse/remote_write/labels.py` says how they map back to labels, and the SQL below is that
`rebuild` in SQL: `Hostname` from host unless the host came from `instance` (the `__host__`
key), `gpu`, `UUID`, then every label kept in `labels`. A prom_samples series is its metric
and its labels JSON. Staleness markers (wanka.stale_markers) carry the labels JSON of either.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from warehouse.promql.plan import Plan, PromQLError, text
from warehouse.tsdb import relations
from warehouse.tsdb.relations import SERIES

_ENTRY = "{{'key': {key}, 'value': {value}}}"
_JSON_MAP = "map_entries(CAST(coalesce({0}, '{{}}')::JSON AS MAP(VARCHAR, VARCHAR)))"
_KEEP = "lambda e: e.key <> '__host__' AND e.value <> ''"


def _sorted_map(*parts: str) -> str:
    return f"map_from_entries(list_sort(list_filter(list_concat({', '.join(parts)}), {_KEEP})))"


def _when(condition: str, key: str, value: str) -> str:
    entry = _ENTRY.format(key=text(key), value=value)
    return f"CASE WHEN {condition} THEN [{entry}] ELSE [] END"


#: The labels of a wanka.gpu_series row `r`, as `rebuild` gives them.
GPU_LABELS = _sorted_map(
    "[" + _ENTRY.format(key="'__name__'", value="r.metric") + "]",
    _when(
        "r.host IS NOT NULL AND json_extract_string(r.labels, '$.__host__') IS NULL",
        "Hostname",
        "r.host",
    ),
    _when("r.gpu IS NOT NULL", "gpu", "CAST(r.gpu AS VARCHAR)"),
    _when("r.uuid IS NOT NULL", "UUID", "r.uuid"),
    _JSON_MAP.format("r.labels"),
)


def json_labels(metric: str, labels: str) -> str:
    """The labels of a prom_samples or stale_markers row: its metric and labels JSON."""
    return _sorted_map(
        "[" + _ENTRY.format(key="'__name__'", value=metric) + "]", _JSON_MAP.format(labels)
    )


def timestamp(ms: int) -> str:
    """A TIMESTAMPTZ literal, exact to the millisecond."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return f"TIMESTAMPTZ '{moment.isoformat(sep=' ', timespec='milliseconds')}'"


def matcher_sql(name: str, op: str, value: str, labels: str = "labels") -> str:
    """One label matcher over a labels map (an absent label matches as the empty string)."""
    return compare_text(f"coalesce({labels}[{text(name)}], '')", op, value)


def compare_text(got: str, op: str, value: str) -> str:
    """`got` (SQL text) against `value` by a matcher operator; regular expressions are RE2,
    fully anchored, as in Prometheus."""
    match op:
        case "=":
            return f"{got} = {text(value)}"
        case "!=":
            return f"{got} <> {text(value)}"
        case "=~":
            return f"regexp_full_match({got}, {text(value)})"
        case "!~":
            return f"NOT regexp_full_match({got}, {text(value)})"
    raise PromQLError(f"unknown matcher operator {op}")


_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def matchers_of(node: Any) -> list[list[tuple[str, str, str]]]:
    """A VectorSelector's matchers as alternatives of (name, op, value) conjunctions, the
    metric name included as a `__name__` matcher."""
    base = [(m.name, _OPS[str(m.op).rsplit(".", 1)[-1]], m.value) for m in node.matchers.matchers]
    if node.name:
        base.append(("__name__", "=", node.name))
    groups = [
        base + [(m.name, _OPS[str(m.op).rsplit(".", 1)[-1]], m.value) for m in group]
        for group in node.matchers.or_matchers
    ]
    return groups or [base]


def metric_of(groups: list[list[tuple[str, str, str]]]) -> str | None:
    """The one metric name the matchers allow, when they say so with `__name__=`."""
    names = {v for group in groups for (n, op, v) in group if n == "__name__" and op == "="}
    each = all(any(n == "__name__" and op == "=" for n, op, _ in g) for g in groups)
    return names.pop() if each and len(names) == 1 else None


def _pushdown(groups: list[list[tuple[str, str, str]]], column: str) -> str:
    """What the matchers say of the metric name, as a filter on `column` (row group pruning)."""
    alternatives = []
    for group in groups:
        on_name = [compare_text(column, op, v) for n, op, v in group if n == "__name__"]
        alternatives.append(" AND ".join(on_name) or "true")
    return " OR ".join(f"({a})" for a in alternatives)


def gpu_label(name: str) -> str:
    """Label `name` of a wanka.gpu_series row `r` as GPU_LABELS gives it ('' when it has none),
    read without building the label map (a map costs ~8 µs a series, a JSON field ~0.3)."""
    stored = f"json_extract_string(r.labels, {text(f'$.{chr(34)}{name}{chr(34)}')})"
    match name:
        case "__name__":
            return "r.metric"
        case "__host__":
            return "''"
        case "Hostname":
            from_host = "r.host IS NOT NULL AND json_extract_string(r.labels, '$.__host__') IS NULL"
            return f"coalesce(CASE WHEN {from_host} THEN r.host ELSE {stored} END, '')"
        case "gpu":
            return f"coalesce(CAST(r.gpu AS VARCHAR), {stored}, '')"
        case "UUID":
            return f"coalesce(r.uuid, {stored}, '')"
    return f"coalesce({stored}, '')"


def _gpu_wanted(groups: list[list[tuple[str, str, str]]]) -> str:
    """The matchers over a wanka.gpu_series row, each label read on its own (`gpu_label`)."""
    return " OR ".join(
        "(" + " AND ".join(compare_text(gpu_label(n), op, v) for n, op, v in group) + ")"
        for group in groups
    )


def _prom_series(groups: list[list[tuple[str, str, str]]], lo_ms: int, hi_ms: int) -> str:
    """The prom_samples series with samples in [lo_ms, hi_ms] the matchers select."""
    wanted = " OR ".join(
        "(" + " AND ".join(matcher_sql(n, op, v) for n, op, v in group) + ")" for group in groups
    )
    window = f"ts BETWEEN {timestamp(lo_ms)} AND {timestamp(hi_ms)}"
    return (
        f"SELECT * FROM (\n"
        f"  SELECT -row_number() OVER (ORDER BY metric, labels) AS sid,\n"
        f"         {json_labels('metric', 'labels')} AS labels, metric, labels AS raw\n"
        f"  FROM (SELECT DISTINCT metric, labels FROM prom_samples\n"
        f"        WHERE ({_pushdown(groups, 'metric')}) AND {window})\n"
        f") WHERE {wanted}"
    )


def select(plan: Plan, groups: list[list[tuple[str, str, str]]], lo_ms: int, hi_ms: int) -> str:
    """A CTE of the series the matchers select (for prom_samples series, those with samples in
    [lo_ms, hi_ms]): sid, labels, and (for prom_samples series) metric and raw, the labels
    JSON. A gpu_series row is matched before its label map is built. The series API's; a
    query reads `selection`."""
    return plan.add(
        "series",
        f"SELECT r.series_id::BIGINT AS sid, {GPU_LABELS} AS labels,\n"
        f"       NULL::VARCHAR AS metric, NULL::VARCHAR AS raw\n"
        f"FROM {SERIES} r\n"
        f"WHERE ({_pushdown(groups, 'r.metric')}) AND ({_gpu_wanted(groups)})\n"
        f"UNION ALL\n"
        f"{_prom_series(groups, lo_ms, hi_ms)}",
    )


def label_values(
    plan: Plan, groups: list[list[tuple[str, str, str]]], name: str, lo_ms: int, hi_ms: int
) -> str:
    """A CTE of the values (`value`) of label `name` among the series the matchers select."""
    return plan.add(
        "values",
        f"SELECT {gpu_label(name)} AS value FROM {SERIES} r\n"
        f"WHERE ({_pushdown(groups, 'r.metric')}) AND ({_gpu_wanted(groups)})\n"
        f"UNION ALL\n"
        f"SELECT coalesce(labels[{text(name)}], '') FROM ({_prom_series(groups, lo_ms, hi_ms)})",
    )


def selection(
    plan: Plan, groups: list[list[tuple[str, str, str]]], lo_ms: int, hi_ms: int
) -> tuple[str, str]:
    """CTEs of the series the matchers select (as `select`) and of their samples in
    [lo_ms, hi_ms]: sid, ts (ms), v, stale (a staleness marker: where the series ended).
    The gpu_series rows are matched and their samples read without their label maps, and the
    series CTE is written into each reader: a map is built only where labels are read (an
    aggregation without `by` reads none). A map costs ~5 µs a series, and a day of job label
    changes at 10,000 GPUs leaves ~67,000 series of a metric."""
    found = plan.add(
        "found",
        f"SELECT r.series_id::BIGINT AS sid, r.metric, r.host, r.gpu, r.uuid, r.labels\n"
        f"FROM {SERIES} r\n"
        f"WHERE ({_pushdown(groups, 'r.metric')}) AND ({_gpu_wanted(groups)})",
    )
    prom = plan.add("promseries", _prom_series(groups, lo_ms, hi_ms))
    window = f"ts BETWEEN {timestamp(lo_ms)} AND {timestamp(hi_ms)}"
    metric = metric_of(groups)
    held = relations.samples(
        ts=(timestamp(lo_ms), timestamp(hi_ms)),
        series=f"SELECT sid FROM {found}",
        metrics=None if metric is None else text(metric),
    )
    marked = (  # the series that may have staleness markers in the window, with their maps
        f"SELECT sid, {GPU_LABELS} AS labels FROM {found} r\n"
        f"  WHERE r.metric IN (SELECT metric FROM wanka.stale_markers WHERE {window})\n"
        f"  UNION ALL SELECT sid, labels FROM {prom}"
    )
    samples = plan.add(
        "samples",
        f"SELECT x.sid, epoch_ms(s.ts) AS ts, s.value AS v, false AS stale\n"
        f"FROM {held} s JOIN {found} x ON s.series_id = x.sid WHERE s.{window}\n"
        f"UNION ALL\n"
        f"SELECT x.sid, epoch_ms(p.ts), p.value, false\n"
        f"FROM prom_samples p JOIN {prom} x\n"
        f"  ON p.metric = x.metric AND p.labels IS NOT DISTINCT FROM x.raw WHERE p.{window}\n"
        f"UNION ALL\n"
        f"SELECT x.sid, epoch_ms(m.ts), NULL, true\n"
        f"FROM wanka.stale_markers m JOIN (\n  {marked}\n) x\n"
        f"  ON {json_labels('m.metric', 'm.labels')} = x.labels WHERE m.{window}",
    )
    series = plan.add(
        "series",
        f"SELECT r.sid, {GPU_LABELS} AS labels, NULL::VARCHAR AS metric, NULL::VARCHAR AS raw\n"
        f"FROM {found} r\n"
        f"UNION ALL\n"
        f"SELECT * FROM {prom}",
        inline=True,
    )
    return series, samples
