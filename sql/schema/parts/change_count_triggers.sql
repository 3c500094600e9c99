-- A tracked table's statement triggers (sql/schema/0005_dynamic_tables.sql): how many rows each
-- UPDATE and DELETE touched, logged in wanka.table_changes with a seq from wanka.batch_seq.
-- `@include(parts/change_count_triggers.sql, table=NAME);` in a schema step.
CREATE TRIGGER ${table}_changes_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT '${table}', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER ${table}_changes_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT '${table}', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;
