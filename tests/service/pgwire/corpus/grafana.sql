-- Grafana's PostgreSQL data source (public/app/plugins/datasource/grafana-postgresql-datasource/
-- postgresMetaQuery.ts) and a panel query its macros expand to.

-- version
SELECT current_setting('server_version_num')::int/100 as version;

-- timescaledb probe
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb';

-- schemas
SELECT schema_name AS "name" FROM information_schema.schemata
WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache',
  '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information',
  'timescaledb_experimental')
ORDER BY schema_name;

-- tables of a schema
SELECT quote_ident(table_name) AS "table" FROM information_schema.tables
WHERE quote_ident(table_schema) = 'public' ORDER BY 1;

-- tables on the search path
SELECT CASE WHEN quote_ident(table_schema) IN (
    SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
    FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1),
                         array_upper(string_to_array(current_setting('search_path'),','),1)) as i,
         string_to_array(current_setting('search_path'),',') s)
  THEN quote_ident(table_name) ELSE quote_ident(table_schema) || '.' || quote_ident(table_name) END AS "table"
FROM information_schema.tables
WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache')
ORDER BY 1;

-- columns of a table
SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns
WHERE CASE WHEN array_length(parse_ident('jobs'),1) = 2
  THEN quote_ident(table_schema) = (parse_ident('jobs'))[1] AND quote_ident(table_name) = (parse_ident('jobs'))[2]
  ELSE quote_ident(table_name) = 'jobs' AND quote_ident(table_schema) IN (
    SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
    FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1),
                         array_upper(string_to_array(current_setting('search_path'),','),1)) as i,
         string_to_array(current_setting('search_path'),',') s) END;

-- time series panel ($__timeGroupAlias, $__timeFilter expanded)
SELECT floor(extract(epoch from ts)/60)*60 AS "time", host, avg(value) AS value
FROM gpu_metrics
WHERE ts BETWEEN '2024-01-01T00:00:00Z' AND '2024-01-02T00:00:00Z' AND metric = 'DCGM_FI_DEV_POWER_USAGE'
GROUP BY 1, 2 ORDER BY 1;

-- table panel with epoch conversion
SELECT extract(epoch from start_at) AS time_sec, job_id, gpus FROM jobs
WHERE start_at >= to_timestamp(1704067200) AND start_at < to_timestamp(1704153600)
ORDER BY 1 LIMIT 100;
