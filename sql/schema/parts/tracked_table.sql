-- Change tracking of a new tracked table (`-- table NAME: tracked`), whole and in the order it
-- needs: the statement triggers, the change-rows log, the row triggers. Its batch_id column
-- says `DEFAULT nextval('wanka.batch_seq')` in its CREATE TABLE.
-- `@include(parts/tracked_table.sql, table=NAME);` in a schema step, after the CREATE TABLE.
@include(change_count_triggers.sql, table=${table});
@include(change_rows_table.sql, table=${table});
@include(change_rows_triggers.sql, table=${table});
