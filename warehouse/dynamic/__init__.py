"""Dynamic tables: tables declared by a query and kept equal to it by refreshes.

`warehouse.parsing.script` recognises CREATE / ALTER / REFRESH / DROP DYNAMIC TABLE and `statements`
runs them; `catalog` keeps the definitions in `wanka.dynamic_tables`; `plan/` turns a defining
query into a typed plan — `Append`, `Aggregate`, `Groups` or `Full` with its reason
(`plan/kinds.py`, small sqlglot rewrite steps) — and `dml` wraps its queries in the statements a
refresh runs; `refresh` applies one refresh in one transaction (`regroup` when it recomputes the
affected groups, `chain` when another dynamic table reads it), `history` records it in
`wanka.refresh_history` and `schedule` decides which tables are due.
"""
