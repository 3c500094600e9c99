"""PromQL over the warehouse, as Prometheus 2.42 evaluates it: an expression parsed by
`promql-parser`, translated to one SQL query over gpu_metrics' series and samples (and
prom_samples), run by DuckDB.

`evaluate` is the entry point: one SQL query for an instant or a range query, run by the caller
in the caller's session, so roles, time limits and row caps are the SQL faces' own. `translate`
walks the parse tree, one small step per construct (`source` the storage side: the series a set
of matchers selects with their labels rebuilt exactly, their samples and staleness markers;
`ranges` the range-vector functions, `functions`, `aggregate`, `binary`, `labels`), each adding
named CTEs to a `plan`; a vector is two relations, its series (`sid`, sorted label map) and its
points (`sid`, step index `k`, value), so label work never touches the points. `render` writes
Prometheus's JSON, `catalog` the series / labels / label values endpoints, `times` reads times and
durations as Prometheus's API does, and `sql_function` is the `promql_range` / `promql_query`
table functions (expanded into their SQL before DuckDB parses the statement). Semantics are
Prometheus 2.42's (the reference its tests compare with): lookback and range windows closed at
both ends; a construct not evaluated yet is an error naming it, never a wrong answer.
"""
