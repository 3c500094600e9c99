-- Engines: whether each dynamic table's query runs the same on Apache Spark (scale-out).
-- Decided once, when the table is created (warehouse.engines.portable.portability_problems):
-- a construct Spark cannot run or would run differently is named here with its portable
-- alternative, so that `wanka refresh --engine spark` never finds out at refresh time.
ALTER TABLE wanka.dynamic_tables ADD COLUMN spark_portable BOOLEAN;
ALTER TABLE wanka.dynamic_tables ADD COLUMN spark_reason VARCHAR;
