-- PostgreSQL catalog relations as DuckDB queries over the warehouse's own catalog functions.
-- The rewriter inlines each one as a subquery where a client names pg_catalog.<name> (or
-- information_schema.<name>), so the warehouse file holds none of them and the role policy
-- sees only duckdb_*() catalog functions. The `main` schema is shown as `public`. A session's
-- duckdb_tables/columns/constraints/indexes() leave out wanka.users and wanka.tokens
-- (warehouse/security/hidden.py), so no view lists them.
-- Format: `-- view: [schema.]name` then one SELECT. `-- name: col ...`, `-- "char": col ...` and
-- `-- varchar: col ...` lines after the header say which columns PostgreSQL types name, "char"
-- and varchar: DuckDB has VARCHAR (text on the wire) for all of them, so the wire labels them
-- by these lines (compat/declared.py).

-- view: pg_namespace
-- name: nspname
SELECT oid::UINTEGER AS oid, memory.pg_compat.schema_name(schema_name) AS nspname,
       10::UINTEGER AS nspowner, NULL::VARCHAR[] AS nspacl
FROM duckdb_schemas() WHERE database_name IN ('warehouse', 'system') AND NOT (
    database_name = 'system' AND schema_name = 'main')

-- view: pg_class
-- name: relname
-- "char": relpersistence relkind relreplident
SELECT table_oid::UINTEGER AS oid, table_name AS relname, schema_oid::UINTEGER AS relnamespace,
       0::UINTEGER AS reltype, 0::UINTEGER AS reloftype, 10::UINTEGER AS relowner, 2::UINTEGER AS relam,
       0::UINTEGER AS relfilenode, 0::UINTEGER AS reltablespace, 0 AS relpages,
       estimated_size::FLOAT AS reltuples, 0 AS relallvisible, 0::UINTEGER AS reltoastrelid,
       has_primary_key OR index_count > 0 AS relhasindex, false AS relisshared,
       CASE WHEN temporary THEN 't' ELSE 'p' END AS relpersistence, 'r' AS relkind,
       column_count::SMALLINT AS relnatts, check_constraint_count::SMALLINT AS relchecks,
       false AS relhasrules,
       false AS relhastriggers, false AS relhassubclass, false AS relrowsecurity,
       false AS relforcerowsecurity, true AS relispopulated, 'd' AS relreplident,
       false AS relispartition, 0::UINTEGER AS relrewrite, 0 AS relfrozenxid, 0 AS relminmxid,
       NULL::VARCHAR[] AS relacl, NULL::VARCHAR[] AS reloptions, NULL AS relpartbound
FROM duckdb_tables() WHERE database_name = 'warehouse'
UNION ALL
-- gpu_metrics is a view over the series and samples (sql/schema/0012): a table to clients
SELECT view_oid::UINTEGER, view_name, schema_oid::UINTEGER, 0::UINTEGER, 0::UINTEGER,
       10::UINTEGER, CASE WHEN shown_as_table THEN 2 ELSE 0 END::UINTEGER, 0::UINTEGER,
       0::UINTEGER, 0, 0, 0, 0::UINTEGER, false, false,
       CASE WHEN temporary THEN 't' ELSE 'p' END, CASE WHEN shown_as_table THEN 'r' ELSE 'v' END,
       column_count::SMALLINT, 0::SMALLINT, NOT shown_as_table,
       false, false, false, false, true, 'd', false, 0::UINTEGER, 0, 0, NULL, NULL, NULL
FROM (SELECT *, schema_name = 'main' AND view_name = 'gpu_metrics' AS shown_as_table
      FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal)
UNION ALL
-- pg_catalog's and information_schema's own relations (objects.LISTED)
SELECT view_oid::UINTEGER, view_name,
       memory.pg_compat.listed_namespace_oid(schema_name)::UINTEGER, 0::UINTEGER, 0::UINTEGER,
       10::UINTEGER, 0::UINTEGER, 0::UINTEGER, 0::UINTEGER, 0, 0, 0, 0::UINTEGER, false, false,
       'p', memory.pg_compat.listed_relkind(schema_name, view_name), column_count::SMALLINT,
       0::SMALLINT, false, false, false, false, false, true, 'd', false, 0::UINTEGER, 0, 0, NULL,
       NULL, NULL
FROM duckdb_views() WHERE database_name = 'memory' AND schema_name LIKE 'pg\_compat\_%' ESCAPE '\'
UNION ALL
SELECT (table_oid * 1000 + constraint_index)::UINTEGER, table_name || '_' || CASE constraint_type
           WHEN 'PRIMARY KEY' THEN 'pkey' ELSE array_to_string(constraint_column_names, '_') || '_key' END,
       schema_oid::UINTEGER, 0::UINTEGER, 0::UINTEGER, 10::UINTEGER, 403::UINTEGER, 0::UINTEGER,
       0::UINTEGER, 0, 0, 0, 0::UINTEGER, false, false, 'p', 'i',
       len(constraint_column_names)::SMALLINT, 0::SMALLINT, false, false, false, false, false,
       true, 'd', false, 0::UINTEGER, 0, 0, NULL, NULL, NULL
FROM duckdb_constraints() WHERE database_name = 'warehouse'
    AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
UNION ALL
SELECT index_oid::UINTEGER, index_name, schema_oid::UINTEGER, 0::UINTEGER, 0::UINTEGER,
       10::UINTEGER, 403::UINTEGER, 0::UINTEGER, 0::UINTEGER, 0, 0, 0, 0::UINTEGER, false, false,
       'p', 'i', 1::SMALLINT, 0::SMALLINT, false, false, false, false, false, true, 'd', false,
       0::UINTEGER, 0, 0, NULL, NULL, NULL
FROM duckdb_indexes() WHERE database_name = 'warehouse'
UNION ALL
SELECT sequence_oid::UINTEGER, sequence_name, schema_oid::UINTEGER, 0::UINTEGER, 0::UINTEGER,
       10::UINTEGER, 0::UINTEGER, 0::UINTEGER, 0::UINTEGER, 0, 0, 0, 0::UINTEGER, false, false,
       'p', 'S', 0::SMALLINT, 0::SMALLINT, false, false, false, false, false, true, 'd', false,
       0::UINTEGER, 0, 0, NULL, NULL, NULL
FROM duckdb_sequences() WHERE database_name = 'warehouse'

-- view: pg_attribute
-- name: attname
-- "char": attstorage attalign attidentity attgenerated attcompression
SELECT table_oid::UINTEGER AS attrelid, column_name AS attname,
       memory.pg_compat.type_oid(data_type)::UINTEGER AS atttypid, -1 AS attstattarget,
       -1::SMALLINT AS attlen, column_index::SMALLINT AS attnum,
       CASE WHEN data_type LIKE '%[]' THEN 1 ELSE 0 END AS attndims, -1 AS attcacheoff,
       memory.pg_compat.type_mod(data_type) AS atttypmod, false AS attbyval, 'i' AS attalign,
       CASE WHEN memory.pg_compat.type_oid(data_type) IN (16, 20, 21, 23, 26, 700, 701, 1082, 1083,
           1114, 1184, 1186, 2950) THEN 'p' ELSE 'x' END AS attstorage, '' AS attcompression,
       NOT is_nullable AS attnotnull, column_default IS NOT NULL AS atthasdef,
       false AS atthasmissing, '' AS attidentity, '' AS attgenerated, false AS attisdropped,
       true AS attislocal, 0 AS attinhcount, 0::UINTEGER AS attcollation,
       NULL::VARCHAR[] AS attacl, NULL::VARCHAR[] AS attoptions, NULL::VARCHAR[] AS attfdwoptions,
       NULL AS attmissingval
FROM duckdb_columns() WHERE database_name = 'warehouse'
    OR (database_name = 'memory' AND schema_name LIKE 'pg\_compat\_%' ESCAPE '\')

-- view: pg_attrdef
SELECT (table_oid * 10000 + column_index)::UINTEGER AS oid, table_oid::UINTEGER AS adrelid,
       column_index::SMALLINT AS adnum, column_default AS adbin
FROM duckdb_columns() WHERE database_name = 'warehouse'
    AND column_default IS NOT NULL

-- view: pg_index
SELECT (table_oid * 1000 + constraint_index)::UINTEGER AS indexrelid, table_oid::UINTEGER AS indrelid,
       len(constraint_column_indexes)::SMALLINT AS indnatts,
       len(constraint_column_indexes)::SMALLINT AS indnkeyatts,
       true AS indisunique, false AS indnullsnotdistinct,
       constraint_type = 'PRIMARY KEY' AS indisprimary,
       false AS indisexclusion, true AS indimmediate, false AS indisclustered, true AS indisvalid,
       false AS indcheckxmin, true AS indisready, true AS indislive, false AS indisreplident,
       memory.pg_compat.attnums(constraint_column_indexes) AS indkey,
       [] ::BIGINT[] AS indcollation, []::BIGINT[] AS indclass, []::SMALLINT[] AS indoption,
       NULL AS indexprs, NULL AS indpred
FROM duckdb_constraints() WHERE database_name = 'warehouse'
    AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')

-- view: pg_constraint
-- name: conname
-- "char": contype confupdtype confdeltype confmatchtype
SELECT (table_oid * 1000 + constraint_index)::UINTEGER AS oid,
       table_name || '_' || CASE constraint_type WHEN 'PRIMARY KEY' THEN 'pkey'
           WHEN 'FOREIGN KEY' THEN array_to_string(constraint_column_names, '_') || '_fkey'
           WHEN 'CHECK' THEN 'check' || constraint_index
           ELSE array_to_string(constraint_column_names, '_') || '_key' END AS conname,
       schema_oid::UINTEGER AS connamespace,
       CASE constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u'
           WHEN 'FOREIGN KEY' THEN 'f' ELSE 'c' END AS contype,
       false AS condeferrable, false AS condeferred, true AS convalidated,
       table_oid::UINTEGER AS conrelid, 0::UINTEGER AS contypid,
       CASE WHEN constraint_type IN ('PRIMARY KEY', 'UNIQUE')
           THEN table_oid * 1000 + constraint_index ELSE 0 END::UINTEGER AS conindid,
       0::UINTEGER AS conparentid,
       coalesce((SELECT min(t.table_oid) FROM duckdb_tables() t
                 WHERE t.database_name = 'warehouse' AND t.table_name = c.referenced_table), 0)
           ::UINTEGER AS confrelid,
       'a' AS confupdtype, 'a' AS confdeltype, 's' AS confmatchtype, true AS conislocal,
       0 AS coninhcount, true AS connoinherit,
       memory.pg_compat.attnums(constraint_column_indexes) AS conkey,
       NULL::SMALLINT[] AS confkey, NULL::UINTEGER[] AS conpfeqop,
       NULL::UINTEGER[] AS conppeqop, NULL::UINTEGER[] AS conffeqop,
       NULL::UINTEGER[] AS conexclop, expression AS conbin
FROM duckdb_constraints() c WHERE database_name = 'warehouse'
    AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')

-- view: pg_type
-- name: typname
-- "char": typtype typcategory typdelim typalign typstorage
SELECT oid::UINTEGER AS oid, typname, (SELECT oid FROM duckdb_schemas()
        WHERE database_name = 'system' AND schema_name = 'pg_catalog')::UINTEGER AS typnamespace,
       10::UINTEGER AS typowner, typlen::SMALLINT AS typlen, typlen > 0 AS typbyval,
       CASE WHEN typname LIKE '\_%' ESCAPE '\' THEN 'b' WHEN oid = 2249 THEN 'p' ELSE 'b' END
           AS typtype,
       CASE WHEN typname LIKE '\_%' ESCAPE '\' THEN 'A' WHEN oid IN (20, 21, 23, 700, 701, 1700)
           THEN 'N' WHEN oid IN (25, 1043, 19, 18, 1042) THEN 'S' WHEN oid = 16 THEN 'B'
           WHEN oid IN (1082, 1083, 1114, 1184) THEN 'D' ELSE 'U' END AS typcategory,
       false AS typispreferred, true AS typisdefined, ',' AS typdelim, 0::UINTEGER AS typrelid,
       typelem::UINTEGER AS typelem, typarray::UINTEGER AS typarray, typname || 'in' AS typinput,
       typname || 'out' AS typoutput, typname || 'recv' AS typreceive,
       typname || 'send' AS typsend, '-' AS typmodin, '-' AS typmodout, '-' AS typanalyze,
       'i' AS typalign, 'p' AS typstorage, false AS typnotnull, 0::UINTEGER AS typbasetype,
       -1 AS typtypmod, 0 AS typndims, 0::UINTEGER AS typcollation, NULL AS typdefaultbin,
       NULL AS typdefault, NULL::VARCHAR[] AS typacl
FROM (VALUES
    (16, 'bool', 1, 0, 1000), (17, 'bytea', -1, 0, 1001), (18, 'char', 1, 0, 1002),
    (19, 'name', 64, 0, 1003), (20, 'int8', 8, 0, 1016), (21, 'int2', 2, 0, 1005),
    (23, 'int4', 4, 0, 1007), (25, 'text', -1, 0, 1009), (26, 'oid', 4, 0, 1028),
    (114, 'json', -1, 0, 199), (700, 'float4', 4, 0, 1021), (701, 'float8', 8, 0, 1022),
    (1042, 'bpchar', -1, 0, 1014), (1043, 'varchar', -1, 0, 1015), (1082, 'date', 4, 0, 1182),
    (1083, 'time', 8, 0, 1183), (1114, 'timestamp', 8, 0, 1115),
    (1184, 'timestamptz', 8, 0, 1185), (1186, 'interval', 16, 0, 1187),
    (1700, 'numeric', -1, 0, 1231), (2950, 'uuid', 16, 0, 2951), (3802, 'jsonb', -1, 0, 3807),
    (2205, 'regclass', 4, 0, 2210), (2206, 'regtype', 4, 0, 2211), (2249, 'record', -1, 0, 2287),
    (1000, '_bool', -1, 16, 0), (1001, '_bytea', -1, 17, 0), (1005, '_int2', -1, 21, 0),
    (1007, '_int4', -1, 23, 0), (1009, '_text', -1, 25, 0), (1015, '_varchar', -1, 1043, 0),
    (1016, '_int8', -1, 20, 0), (1021, '_float4', -1, 700, 0), (1022, '_float8', -1, 701, 0),
    (1028, '_oid', -1, 26, 0), (1115, '_timestamp', -1, 1114, 0), (1182, '_date', -1, 1082, 0),
    (1185, '_timestamptz', -1, 1184, 0), (1187, '_interval', -1, 1186, 0),
    (1231, '_numeric', -1, 1700, 0), (2951, '_uuid', -1, 2950, 0), (199, '_json', -1, 114, 0),
    (3807, '_jsonb', -1, 3802, 0), (1003, '_name', -1, 19, 0), (1002, '_char', -1, 18, 0)
) AS t(oid, typname, typlen, typelem, typarray)

-- view: pg_database
-- name: datname
-- "char": datlocprovider
SELECT 16384::UINTEGER AS oid, 'wanka' AS datname, 10::UINTEGER AS datdba, 6 AS encoding,
       'c' AS datlocprovider, false AS datistemplate, true AS datallowconn,
       -1 AS datconnlimit, 0 AS datfrozenxid, 0 AS datminmxid, 1663::UINTEGER AS dattablespace,
       'C.UTF-8' AS datcollate, 'C.UTF-8' AS datctype, NULL AS daticulocale,
       NULL AS datcollversion, NULL::VARCHAR[] AS datacl

-- view: pg_roles
-- name: rolname
SELECT 'wanka' AS rolname, true AS rolsuper, true AS rolinherit,
       false AS rolcreaterole, false AS rolcreatedb, true AS rolcanlogin,
       false AS rolreplication, -1 AS rolconnlimit, '********' AS rolpassword,
       NULL::TIMESTAMPTZ AS rolvaliduntil, false AS rolbypassrls, NULL::VARCHAR[] AS rolconfig,
       10::UINTEGER AS oid

-- view: pg_user
-- name: usename
SELECT 'wanka' AS usename, 10::UINTEGER AS usesysid, false AS usecreatedb, true AS usesuper,
       false AS userepl, false AS usebypassrls, '********' AS passwd,
       NULL::TIMESTAMPTZ AS valuntil, NULL::VARCHAR[] AS useconfig

-- view: pg_authid
-- name: rolname
SELECT 10::UINTEGER AS oid, 'wanka' AS rolname, true AS rolsuper, true AS rolinherit,
       false AS rolcreaterole, false AS rolcreatedb, true AS rolcanlogin,
       false AS rolreplication, false AS rolbypassrls, -1 AS rolconnlimit

-- view: pg_auth_members
SELECT 0::UINTEGER AS roleid, 0::UINTEGER AS member, 0::UINTEGER AS grantor, false AS admin_option
WHERE false

-- view: pg_description
SELECT table_oid::UINTEGER AS objoid, 1259::UINTEGER AS classoid, 0 AS objsubid,
       comment AS description
FROM duckdb_tables() WHERE database_name = 'warehouse'
    AND comment IS NOT NULL
UNION ALL
SELECT table_oid::UINTEGER, 1259::UINTEGER, column_index, comment FROM duckdb_columns()
WHERE database_name = 'warehouse'
    AND comment IS NOT NULL

-- view: pg_shdescription
SELECT 0::UINTEGER AS objoid, 0::UINTEGER AS classoid, NULL::VARCHAR AS description WHERE false

-- view: pg_stat_user_tables
-- name: schemaname relname
SELECT table_oid::UINTEGER AS relid, memory.pg_compat.schema_name(schema_name) AS schemaname,
       table_name AS relname, 0::BIGINT AS seq_scan, 0::BIGINT AS seq_tup_read,
       0::BIGINT AS idx_scan, 0::BIGINT AS idx_tup_fetch, 0::BIGINT AS n_tup_ins,
       0::BIGINT AS n_tup_upd, 0::BIGINT AS n_tup_del, 0::BIGINT AS n_tup_hot_upd,
       estimated_size::BIGINT AS n_live_tup, 0::BIGINT AS n_dead_tup,
       NULL::TIMESTAMPTZ AS last_vacuum, NULL::TIMESTAMPTZ AS last_autovacuum,
       NULL::TIMESTAMPTZ AS last_analyze, NULL::TIMESTAMPTZ AS last_autoanalyze
FROM duckdb_tables() WHERE database_name = 'warehouse'

-- view: pg_stat_activity
-- name: datname usename
SELECT 16384::UINTEGER AS datid, 'wanka' AS datname, 0 AS pid, NULL::VARCHAR AS usename,
       NULL::VARCHAR AS application_name, NULL::TIMESTAMPTZ AS backend_start,
       NULL::TIMESTAMPTZ AS query_start, 'active' AS state, NULL::VARCHAR AS query
WHERE false

-- view: pg_tables
-- name: schemaname tablename tableowner tablespace
SELECT memory.pg_compat.schema_name(schema_name) AS schemaname, table_name AS tablename,
       'wanka' AS tableowner, NULL::VARCHAR AS tablespace,
       has_primary_key OR index_count > 0 AS hasindexes, false AS hasrules,
       false AS hastriggers, false AS rowsecurity
FROM duckdb_tables() WHERE database_name = 'warehouse'

-- view: pg_views
-- name: schemaname viewname viewowner
SELECT memory.pg_compat.schema_name(schema_name) AS schemaname, view_name AS viewname,
       'wanka' AS viewowner, sql AS definition
FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal

-- view: pg_matviews
-- name: schemaname matviewname matviewowner tablespace
SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS matviewname, ''::VARCHAR AS matviewowner,
       NULL::VARCHAR AS tablespace, false AS hasindexes, false AS ispopulated,
       ''::VARCHAR AS definition WHERE false

-- view: pg_indexes
-- name: schemaname tablename indexname tablespace
SELECT memory.pg_compat.schema_name(schema_name) AS schemaname, table_name AS tablename,
       index_name AS indexname, NULL::VARCHAR AS tablespace, sql AS indexdef
FROM duckdb_indexes() WHERE database_name = 'warehouse'

-- view: pg_settings
SELECT name, setting, NULL::VARCHAR AS unit, 'Client Connection Defaults' AS category,
       '' AS short_desc, NULL::VARCHAR AS extra_desc, 'user' AS context, 'string' AS vartype,
       'default' AS source, NULL::VARCHAR AS min_val, NULL::VARCHAR AS max_val,
       NULL::VARCHAR[] AS enumvals, setting AS boot_val, setting AS reset_val,
       NULL::VARCHAR AS sourcefile, NULL::INTEGER AS sourceline, false AS pending_restart
FROM (VALUES {settings}) AS s(name, setting)

-- view: pg_am
-- name: amname
-- "char": amtype
SELECT oid::UINTEGER AS oid, amname, amhandler, amtype
FROM (VALUES (2, 'heap', 'heap_tableam_handler', 't'), (403, 'btree', 'bthandler', 'i'))
    AS a(oid, amname, amhandler, amtype)

-- view: pg_proc
-- name: proname
-- "char": prokind provolatile proparallel
-- wanka's own functions (the model functions: SQL macros of the warehouse, listed by psql's \df,
-- DBeaver and Superset); DuckDB's built-ins are not PostgreSQL's and are left out. A macro's
-- parameters have no declared type: they are "any", and so is its result.
SELECT f.function_oid::UINTEGER AS oid, f.function_name AS proname,
       s.oid::UINTEGER AS pronamespace, 10::UINTEGER AS proowner, 14::UINTEGER AS prolang,
       100::FLOAT AS procost,
       CASE WHEN f.function_type = 'table_macro' THEN 1000 ELSE 0 END::FLOAT AS prorows,
       0::UINTEGER AS provariadic, '-'::VARCHAR AS prosupport, 'f' AS prokind, false AS prosecdef,
       false AS proleakproof, false AS proisstrict,
       f.function_type = 'table_macro' AS proretset, 'i' AS provolatile, 's' AS proparallel,
       len(f.parameters)::SMALLINT AS pronargs, 0::SMALLINT AS pronargdefaults,
       CASE WHEN f.function_type = 'table_macro' THEN 2249 ELSE 2276 END::UINTEGER AS prorettype,
       list_transform(f.parameters, lambda x: 2276::BIGINT) AS proargtypes,
       NULL::UINTEGER[] AS proallargtypes, NULL::VARCHAR[] AS proargmodes,
       f.parameters::VARCHAR[] AS proargnames, NULL::VARCHAR AS proargdefaults,
       NULL::UINTEGER[] AS protrftypes, coalesce(f.macro_definition, '')::VARCHAR AS prosrc,
       NULL::VARCHAR AS probin, NULL::VARCHAR AS prosqlbody, NULL::VARCHAR[] AS proconfig,
       NULL::VARCHAR[] AS proacl, false AS proisagg
FROM duckdb_functions() AS f
JOIN duckdb_schemas() AS s
    ON s.database_name = f.database_name AND s.schema_name = f.schema_name
WHERE f.database_name = 'warehouse' AND NOT f.internal
    AND f.function_type IN ('macro', 'table_macro')

-- view: pg_language
-- name: lanname
SELECT 13::UINTEGER AS oid, 'internal' AS lanname, 10::UINTEGER AS lanowner, false AS lanispl

-- view: pg_inherits
SELECT 0::UINTEGER AS inhrelid, 0::UINTEGER AS inhparent, 0 AS inhseqno,
       false AS inhdetachpending WHERE false

-- view: pg_partitioned_table
-- "char": partstrat
SELECT 0::UINTEGER AS partrelid, '' AS partstrat, 0::SMALLINT AS partnatts,
       []::SMALLINT[] AS partattrs WHERE false

-- view: pg_opclass
-- name: opcname
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS opcmethod, ''::VARCHAR AS opcname,
       0::UINTEGER AS opcnamespace, 0::UINTEGER AS opcintype, false AS opcdefault WHERE false

-- view: pg_extension
-- name: extname
SELECT 13000::UINTEGER AS oid, 'plpgsql' AS extname, 10::UINTEGER AS extowner,
       0::UINTEGER AS extnamespace, false AS extrelocatable, '1.0' AS extversion,
       NULL::UINTEGER[] AS extconfig, NULL::VARCHAR[] AS extcondition

-- view: pg_policy
-- name: polname
-- "char": polcmd
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS polname, 0::UINTEGER AS polrelid, '' AS polcmd,
       true AS polpermissive, []::UINTEGER[] AS polroles, NULL AS polqual,
       NULL AS polwithcheck WHERE false

-- view: pg_trigger
-- name: tgname
-- "char": tgenabled
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS tgrelid, 0::UINTEGER AS tgparentid, ''::VARCHAR AS tgname,
       0::UINTEGER AS tgfoid, 0::SMALLINT AS tgtype, 'O' AS tgenabled, false AS tgisinternal,
       0::UINTEGER AS tgconstrrelid, 0::UINTEGER AS tgconstrindid, 0::UINTEGER AS tgconstraint,
       false AS tgdeferrable, false AS tginitdeferred, 0::SMALLINT AS tgnargs WHERE false

-- view: pg_rewrite
-- name: rulename
-- "char": ev_type
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS rulename, 0::UINTEGER AS ev_class, '' AS ev_type
WHERE false

-- view: pg_statistic_ext
-- name: stxname
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS stxrelid, ''::VARCHAR AS stxname,
       0::UINTEGER AS stxnamespace, 10::UINTEGER AS stxowner, -1 AS stxstattarget,
       []::SMALLINT[] AS stxkeys, []::VARCHAR[] AS stxkind
WHERE false

-- view: pg_publication
-- name: pubname
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS pubname, false AS puballtables WHERE false

-- view: pg_publication_namespace
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS pnpubid, 0::UINTEGER AS pnnspid WHERE false

-- view: pg_publication_rel
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS prpubid, 0::UINTEGER AS prrelid, NULL AS prqual,
       NULL::SMALLINT[] AS prattrs WHERE false

-- view: pg_foreign_table
SELECT 0::UINTEGER AS ftrelid, 0::UINTEGER AS ftserver, NULL::VARCHAR[] AS ftoptions WHERE false

-- view: pg_foreign_server
-- name: srvname
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS srvname WHERE false

-- view: pg_event_trigger
-- name: evtname
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS evtname WHERE false

-- view: pg_collation
-- name: collname
SELECT 100::UINTEGER AS oid, 'default' AS collname, 0::UINTEGER AS collnamespace

-- view: pg_tablespace
-- name: spcname
SELECT 1663::UINTEGER AS oid, 'pg_default' AS spcname, 10::UINTEGER AS spcowner,
       NULL::VARCHAR[] AS spcacl, NULL::VARCHAR[] AS spcoptions

-- view: pg_enum
-- name: enumlabel
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS enumtypid, 0::FLOAT AS enumsortorder,
       ''::VARCHAR AS enumlabel WHERE false

-- view: pg_depend
-- "char": deptype
SELECT 0::UINTEGER AS classid, 0::UINTEGER AS objid, 0 AS objsubid, 0::UINTEGER AS refclassid,
       0::UINTEGER AS refobjid, 0 AS refobjsubid, '' AS deptype WHERE false

-- view: pg_sequence
SELECT sequence_oid::UINTEGER AS seqrelid, 20::UINTEGER AS seqtypid, start_value AS seqstart,
       increment_by AS seqincrement, max_value AS seqmax, min_value AS seqmin, 1::BIGINT AS seqcache,
       cycle AS seqcycle
FROM duckdb_sequences() WHERE database_name = 'warehouse'

-- view: pg_range
SELECT 0::UINTEGER AS rngtypid, 0::UINTEGER AS rngsubtype WHERE false

-- view: pg_cast
-- "char": castcontext castmethod
SELECT 0::UINTEGER AS oid, 0::UINTEGER AS castsource, 0::UINTEGER AS casttarget,
       0::UINTEGER AS castfunc, 'e' AS castcontext, 'f' AS castmethod WHERE false

-- view: pg_operator
-- name: oprname
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS oprname, 0::UINTEGER AS oprnamespace WHERE false

-- view: pg_aggregate
-- "char": aggkind
SELECT 0::UINTEGER AS aggfnoid, 'n' AS aggkind WHERE false

-- view: pg_timezone_names
SELECT 'UTC' AS name, 'UTC' AS abbrev, INTERVAL 0 SECOND AS utc_offset, false AS is_dst

-- view: information_schema.schemata
-- name: catalog_name schema_name schema_owner default_character_set_catalog
-- name: default_character_set_schema default_character_set_name
-- varchar: sql_path
SELECT 'wanka' AS catalog_name, memory.pg_compat.schema_name(schema_name) AS schema_name,
       'wanka' AS schema_owner, NULL::VARCHAR AS default_character_set_catalog,
       NULL::VARCHAR AS default_character_set_schema,
       NULL::VARCHAR AS default_character_set_name, NULL::VARCHAR AS sql_path
FROM duckdb_schemas() WHERE database_name = 'warehouse'
UNION ALL SELECT 'wanka', 'pg_catalog', 'wanka', NULL, NULL, NULL, NULL
UNION ALL SELECT 'wanka', 'information_schema', 'wanka', NULL, NULL, NULL, NULL

-- view: information_schema.tables
-- name: table_catalog table_schema table_name self_referencing_column_name
-- name: user_defined_type_catalog user_defined_type_schema user_defined_type_name
-- varchar: table_type reference_generation is_insertable_into is_typed commit_action
SELECT 'wanka' AS table_catalog, memory.pg_compat.schema_name(schema_name) AS table_schema,
       table_name, 'BASE TABLE' AS table_type, NULL::VARCHAR AS self_referencing_column_name,
       NULL::VARCHAR AS reference_generation, NULL::VARCHAR AS user_defined_type_catalog,
       NULL::VARCHAR AS user_defined_type_schema, NULL::VARCHAR AS user_defined_type_name,
       'YES' AS is_insertable_into, 'NO' AS is_typed, NULL::VARCHAR AS commit_action
FROM duckdb_tables() WHERE database_name = 'warehouse'
UNION ALL
SELECT 'wanka', memory.pg_compat.schema_name(schema_name), view_name,
       CASE WHEN schema_name = 'main' AND view_name = 'gpu_metrics' THEN 'BASE TABLE' ELSE 'VIEW' END,
       NULL, NULL, NULL, NULL, NULL,
       CASE WHEN schema_name = 'main' AND view_name = 'gpu_metrics' THEN 'YES' ELSE 'NO' END, 'NO',
       NULL
FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal
UNION ALL
SELECT 'wanka', memory.pg_compat.listed_namespace(schema_name), view_name,
       CASE memory.pg_compat.listed_relkind(schema_name, view_name) WHEN 'v' THEN 'VIEW'
            ELSE 'BASE TABLE' END,
       NULL, NULL, NULL, NULL, NULL, 'NO', 'NO', NULL
FROM duckdb_views() WHERE database_name = 'memory' AND schema_name LIKE 'pg\_compat\_%' ESCAPE '\'

-- view: information_schema.views
-- name: table_catalog table_schema table_name
-- varchar: view_definition check_option is_updatable is_insertable_into is_trigger_updatable
-- varchar: is_trigger_deletable is_trigger_insertable_into
SELECT 'wanka' AS table_catalog, memory.pg_compat.schema_name(schema_name) AS table_schema,
       view_name AS table_name, sql AS view_definition, 'NONE' AS check_option,
       'NO' AS is_updatable, 'NO' AS is_insertable_into, 'NO' AS is_trigger_updatable,
       'NO' AS is_trigger_deletable, 'NO' AS is_trigger_insertable_into
FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal
    AND NOT (schema_name = 'main' AND view_name = 'gpu_metrics')

-- view: information_schema.columns
-- name: table_catalog table_schema table_name column_name character_set_catalog
-- name: character_set_schema character_set_name collation_catalog collation_schema collation_name
-- name: domain_catalog domain_schema domain_name udt_catalog udt_schema udt_name scope_catalog
-- name: scope_schema scope_name dtd_identifier
-- varchar: column_default is_nullable data_type interval_type is_self_referencing is_identity
-- varchar: identity_generation is_generated generation_expression is_updatable
SELECT 'wanka' AS table_catalog, memory.pg_compat.schema_name(schema_name) AS table_schema,
       table_name, column_name, column_index AS ordinal_position, column_default,
       CASE WHEN is_nullable THEN 'YES' ELSE 'NO' END AS is_nullable,
       CASE WHEN data_type LIKE '%[]' THEN 'ARRAY'
            WHEN data_type LIKE 'STRUCT%' OR data_type LIKE 'MAP%' THEN 'json'
            ELSE memory.pg_compat.format_type(memory.pg_compat.type_oid(data_type), -1) END
           AS data_type,
       character_maximum_length, NULL::INTEGER AS character_octet_length,
       numeric_precision, numeric_precision_radix, numeric_scale,
       NULL::INTEGER AS datetime_precision, NULL::VARCHAR AS interval_type,
       NULL::INTEGER AS interval_precision, NULL::VARCHAR AS character_set_catalog,
       NULL::VARCHAR AS character_set_schema, NULL::VARCHAR AS character_set_name,
       NULL::VARCHAR AS collation_catalog, NULL::VARCHAR AS collation_schema,
       NULL::VARCHAR AS collation_name, NULL::VARCHAR AS domain_catalog,
       NULL::VARCHAR AS domain_schema, NULL::VARCHAR AS domain_name,
       'wanka' AS udt_catalog, 'pg_catalog' AS udt_schema,
       memory.pg_compat.type_name(memory.pg_compat.type_oid(data_type)) AS udt_name,
       NULL::VARCHAR AS scope_catalog, NULL::VARCHAR AS scope_schema,
       NULL::VARCHAR AS scope_name, NULL::INTEGER AS maximum_cardinality,
       column_index::VARCHAR AS dtd_identifier, 'NO' AS is_self_referencing,
       'NO' AS is_identity, NULL::VARCHAR AS identity_generation,
       'NEVER' AS is_generated, NULL::VARCHAR AS generation_expression, 'YES' AS is_updatable
FROM duckdb_columns() WHERE database_name = 'warehouse'
UNION ALL
SELECT 'wanka', memory.pg_compat.listed_namespace(schema_name), table_name, column_name,
       column_index, column_default, CASE WHEN is_nullable THEN 'YES' ELSE 'NO' END,
       CASE WHEN data_type LIKE '%[]' THEN 'ARRAY'
            WHEN data_type LIKE 'STRUCT%' OR data_type LIKE 'MAP%' THEN 'json'
            ELSE memory.pg_compat.format_type(memory.pg_compat.type_oid(data_type), -1) END,
       character_maximum_length, NULL, numeric_precision, numeric_precision_radix,
       numeric_scale, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       'wanka', 'pg_catalog',
       memory.pg_compat.type_name(memory.pg_compat.type_oid(data_type)), NULL, NULL, NULL,
       NULL, column_index::VARCHAR, 'NO', 'NO', NULL, 'NEVER', NULL, 'NO'
FROM duckdb_columns() WHERE database_name = 'memory' AND schema_name LIKE 'pg\_compat\_%' ESCAPE '\'

-- view: information_schema.table_constraints
-- name: constraint_catalog constraint_schema constraint_name table_catalog table_schema table_name
-- varchar: constraint_type is_deferrable initially_deferred enforced nulls_distinct
SELECT 'wanka' AS constraint_catalog,
       memory.pg_compat.schema_name(schema_name) AS constraint_schema,
       table_name || '_' || CASE constraint_type WHEN 'PRIMARY KEY' THEN 'pkey'
           ELSE array_to_string(constraint_column_names, '_') || '_key' END AS constraint_name,
       'wanka' AS table_catalog, memory.pg_compat.schema_name(schema_name) AS table_schema,
       table_name, constraint_type, 'NO' AS is_deferrable, 'NO' AS initially_deferred,
       'YES' AS enforced, NULL::VARCHAR AS nulls_distinct
FROM duckdb_constraints() WHERE database_name = 'warehouse'
    AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')

-- view: information_schema.key_column_usage
-- name: constraint_catalog constraint_schema constraint_name table_catalog table_schema table_name
-- name: column_name
SELECT 'wanka' AS constraint_catalog,
       memory.pg_compat.schema_name(schema_name) AS constraint_schema,
       table_name || '_' || CASE constraint_type WHEN 'PRIMARY KEY' THEN 'pkey'
           ELSE array_to_string(constraint_column_names, '_') || '_key' END AS constraint_name,
       'wanka' AS table_catalog, memory.pg_compat.schema_name(schema_name) AS table_schema,
       table_name, unnest(constraint_column_names) AS column_name,
       unnest(generate_series(1, len(constraint_column_names)))::INTEGER AS ordinal_position,
       NULL::INTEGER AS position_in_unique_constraint
FROM duckdb_constraints() WHERE database_name = 'warehouse'
    AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')

-- view: information_schema.routines
-- name: specific_catalog specific_schema specific_name routine_catalog routine_schema routine_name
-- varchar: routine_type data_type
SELECT ''::VARCHAR AS specific_catalog, ''::VARCHAR AS specific_schema,
       ''::VARCHAR AS specific_name, ''::VARCHAR AS routine_catalog,
       ''::VARCHAR AS routine_schema, ''::VARCHAR AS routine_name,
       ''::VARCHAR AS routine_type, ''::VARCHAR AS data_type WHERE false

-- view: pg_get_keywords
-- "char": catcode
SELECT keyword_name AS word,
       CASE keyword_category WHEN 'reserved' THEN 'R' WHEN 'unreserved' THEN 'U'
            WHEN 'type_function' THEN 'T' ELSE 'C' END AS catcode,
       false AS barelabel, keyword_category AS catdesc, 'requires AS' AS baredesc
FROM duckdb_keywords()
