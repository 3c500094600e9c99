"""PromQL over the warehouse: an expression parsed by `promql-parser`, translated to one SQL
query over gpu_metrics' series and samples (and prom_samples), run by DuckDB.

`evaluate.py` is the entry point; `plan.py` the CTE builder the translation steps share;
`source.py` the storage side (series labels rebuilt exactly, samples, staleness markers);
`translate.py` walks the parse tree, one small step per construct; `ranges.py` the functions
over range vectors; `render.py` Prometheus's JSON. Semantics are Prometheus 2.42's (the
reference its tests compare with): lookback and range windows closed at both ends.
"""
