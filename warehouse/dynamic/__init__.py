"""Dynamic tables: tables declared by a query and kept equal to it by refreshes.

`statements` recognises CREATE / ALTER / REFRESH / DROP DYNAMIC TABLE in the one query path;
`catalog` keeps the definitions in `wanka.dynamic_tables`; `plan/` turns a defining query into
an append, aggregate or full refresh strategy (small sqlglot rewrite steps); `refresh` applies
one refresh in one transaction and `history` records it in `wanka.refresh_history`.
"""
