"""Who may run what: users and tokens (`users`), the statement policy per role (`policy`), and the
secret tables kept out of every catalog a session can query (`hidden`).

`users` stores users as SCRAM-SHA-256 verifiers (salt, 4096 PBKDF2 iterations, StoredKey,
ServerKey; never the password) in `wanka.users` and bearer tokens as their SHA-256 in
`wanka.tokens`. `policy` decides per role on the one parse every text gets
(`warehouse.parsing`), never on regexes: DuckDB's statement types, DuckDB's own tree of a SELECT
(every table function, function and table it will bind, DML inside CTEs), sqlglot's tree for
DML and DDL; what cannot be checked is refused. Readers: one SELECT/EXPLAIN/SHOW/DESCRIBE;
writers: + INSERT/UPDATE/DELETE/MERGE on base tables; admins: + DDL, dynamic tables. Never:
COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, EXPORT, secrets, file-reading table functions,
`wanka.users`/`wanka.tokens` (golden cases in `tests/warehouse/security/policy_cases.sql`).
`hidden` gives each session's cursor TEMP macros named like DuckDB's `duckdb_tables/columns/
constraints/indexes()` and `pragma_table_info()`, less those two tables' rows (DuckDB binds a
name in `temp` before its system catalog, also inside its own information_schema views and
SHOW); calling the system function by its full name is refused by the policy.
"""
