-- A tracked table's row triggers (sql/schema/0007_change_rows.sql): the OLD rows of a DELETE
-- or UPDATE and the NEW rows of an UPDATE into wanka."changes_NAME", while some dynamic table
-- reads the table. Created after the table's statement triggers (change_count_triggers.sql):
-- DuckDB fires them in creation order, so currval() is the seq of the same statement.
-- `@include(parts/change_rows_triggers.sql, table=NAME);` in a schema step.
CREATE TRIGGER ${table}_rows_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_${table}"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, '${table}'));
CREATE TRIGGER ${table}_rows_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_${table}"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, '${table}'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, '${table}'));
