-- Which version of each shipped dynamic table (sql/dynamic/) a warehouse holds: the md5 of its
-- file's text (its includes expanded) when it was created. When a wanka's file differs, the
-- first command that writes drops the table and the shipped tables that read it and creates
-- them again from the new files (warehouse/dynamic/shipped.py `ensure_shipped`), so a new
-- column is there after an upgrade. Tables given before this step have none: they are
-- replaced when their columns differ from what the new file gives, else given its md5.
ALTER TABLE wanka.shipped_tables ADD COLUMN source_md5 VARCHAR;
