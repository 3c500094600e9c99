"""One parse of a submitted SQL text, which every later step reads: the policy, the write gate,
the query path and the dynamic-table statements.

`script.parse` is called once per text by every face: DuckDB splits it and types each statement
(`extract_statements`); CREATE / ALTER / REFRESH / DROP DYNAMIC TABLE, which DuckDB does not
know, are recognised by their leading tokens (sqlglot's tokenizer, looked at only when the text
says "dynamic"); a call of the PromQL table functions is expanded into its SQL first
(`warehouse.promql.sql_function`), so everything after sees plain SQL. `reads` takes what each
statement reads, calls and writes from a parse tree, never from its text: DuckDB's own
`json_serialize_sql` for SELECT-type statements (every table, table function and function it
will bind), sqlglot's tree for DML and DDL; a tree that cannot be had leaves the statement
`unchecked`, and the policy refuses it. A parse depends on the text alone, so scripts are kept
by text (LRU, 4,096): a dashboard's repeated query costs a dictionary lookup before it runs.
"""
