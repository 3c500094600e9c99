-- Superset (SQLAlchemy postgresql dialect plus its own probes).

-- backend pid for query cancellation
SELECT pg_backend_pid();

-- schema selection
SET search_path = public;

-- search path
SHOW search_path;

-- explain before running
EXPLAIN SELECT count(*) FROM jobs;

-- dialect initialisation
select pg_catalog.version();

-- hstore probe
SELECT to_regtype('hstore');

-- isolation level probe
show transaction isolation level;

-- standard conforming strings
show standard_conforming_strings;

-- current schema
select current_schema();

-- latest partition probe
SELECT relname FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'jobs'::regclass;

-- table stats
SELECT relname, n_live_tup FROM pg_stat_user_tables WHERE schemaname = 'public' ORDER BY relname;

-- keywords
SELECT word FROM pg_get_keywords() WHERE catcode = 'R' ORDER BY word LIMIT 5;

-- quoting helpers
SELECT quote_ident('Gpu Metrics'), quote_ident('jobs'), parse_ident('public."Jobs"'), array_upper(ARRAY[1,2,3], 1), array_lower(ARRAY[1,2,3], 1);

-- descriptions
SELECT objoid, description FROM pg_description WHERE objsubid = 0 LIMIT 1;
