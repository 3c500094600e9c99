-- Scalar macros PostgreSQL clients call, created once per engine as memory.pg_compat.<name>
-- (the in-memory catalog, never the warehouse file). Statements a pg client sends are rewritten
-- to call them qualified. One statement per `;`-terminated block.

CREATE OR REPLACE MACRO memory.pg_compat.scalar_type_oid(t) AS CASE
    WHEN t IN ('BOOLEAN') THEN 16 WHEN t = 'BLOB' THEN 17
    WHEN t IN ('TINYINT', 'SMALLINT', 'UTINYINT') THEN 21
    WHEN t IN ('INTEGER', 'USMALLINT') THEN 23
    WHEN t = 'BIGINT' THEN 20 WHEN t = 'UINTEGER' THEN 26
    WHEN t IN ('HUGEINT', 'UBIGINT', 'UHUGEINT') OR t LIKE 'DECIMAL%' THEN 1700
    WHEN t = 'FLOAT' THEN 700 WHEN t = 'DOUBLE' THEN 701
    WHEN t = 'DATE' THEN 1082 WHEN t = 'TIME' THEN 1083
    WHEN t LIKE 'TIMESTAMP WITH TIME ZONE' THEN 1184 WHEN t LIKE 'TIMESTAMP%' THEN 1114
    WHEN t = 'INTERVAL' THEN 1186 WHEN t = 'UUID' THEN 2950 WHEN t = 'JSON' THEN 114
    WHEN t LIKE 'STRUCT%' OR t LIKE 'MAP%' OR t LIKE 'UNION%' THEN 114
    ELSE 25 END;

CREATE OR REPLACE MACRO memory.pg_compat.type_oid(t) AS CASE
    WHEN t LIKE '%[]' THEN coalesce(
        map_extract_value(MAP {16: 1000, 17: 1001, 21: 1005, 23: 1007, 25: 1009, 20: 1016,
                          700: 1021, 701: 1022, 1114: 1115, 1082: 1182, 1083: 1183,
                          1184: 1185, 1186: 1187, 1700: 1231, 2950: 2951, 114: 199},
                          memory.pg_compat.scalar_type_oid(t[:-3])), 1009)
    ELSE memory.pg_compat.scalar_type_oid(t) END;

CREATE OR REPLACE MACRO memory.pg_compat.type_mod(t) AS CASE
    WHEN t LIKE 'DECIMAL(%' THEN
        (CAST(regexp_extract(t, '\((\d+),', 1) AS INTEGER) << 16)
        + CAST(regexp_extract(t, ',\s*(\d+)\)', 1) AS INTEGER) + 4
    ELSE -1 END;

CREATE OR REPLACE MACRO memory.pg_compat.type_name(type_oid) AS (
    SELECT typname FROM (VALUES
        (16, 'bool'), (17, 'bytea'), (18, 'char'), (19, 'name'), (20, 'int8'), (21, 'int2'),
        (22, 'int2vector'), (23, 'int4'), (24, 'regproc'), (25, 'text'), (26, 'oid'),
        (30, 'oidvector'), (114, 'json'), (194, 'pg_node_tree'), (199, '_json'),
        (700, 'float4'), (701, 'float8'), (705, 'unknown'), (1000, '_bool'), (1001, '_bytea'),
        (1002, '_char'), (1003, '_name'), (1005, '_int2'), (1007, '_int4'), (1009, '_text'),
        (1015, '_varchar'), (1016, '_int8'), (1021, '_float4'), (1022, '_float8'),
        (1028, '_oid'), (1033, 'aclitem'), (1034, '_aclitem'), (1042, 'bpchar'),
        (1043, 'varchar'), (1082, 'date'), (1083, 'time'), (1114, 'timestamp'),
        (1115, '_timestamp'), (1182, '_date'), (1183, '_time'), (1184, 'timestamptz'),
        (1185, '_timestamptz'), (1186, 'interval'), (1187, '_interval'), (1231, '_numeric'),
        (1700, 'numeric'), (2205, 'regclass'), (2206, 'regtype'), (2249, 'record'),
        (2275, 'cstring'), (2276, 'any'), (2277, 'anyarray'), (2278, 'void'),
        (2950, 'uuid'), (2951, '_uuid'), (3802, 'jsonb'), (3807, '_jsonb')
    ) AS types(oid, typname) WHERE oid = type_oid);

CREATE OR REPLACE MACRO memory.pg_compat.format_type(type_oid, typemod) AS CASE
    WHEN type_oid IS NULL THEN NULL
    WHEN type_oid = 1700 AND typemod > 4 THEN
        'numeric(' || ((typemod - 4) >> 16) || ',' || ((typemod - 4) & 65535) || ')'
    ELSE coalesce(map_extract_value(MAP {
        16: 'boolean', 17: 'bytea', 18: '"char"', 19: 'name', 20: 'bigint', 21: 'smallint',
        23: 'integer', 25: 'text', 26: 'oid', 114: 'json', 700: 'real', 701: 'double precision',
        1000: 'boolean[]', 1005: 'smallint[]', 1007: 'integer[]', 1009: 'text[]',
        1016: 'bigint[]', 1021: 'real[]', 1022: 'double precision[]', 1043: 'character varying',
        1082: 'date', 1083: 'time without time zone', 1114: 'timestamp without time zone',
        1115: 'timestamp without time zone[]', 1184: 'timestamp with time zone',
        1185: 'timestamp with time zone[]', 1186: 'interval', 1700: 'numeric',
        1231: 'numeric[]', 2950: 'uuid', 2951: 'uuid[]', 3802: 'jsonb', 2205: 'regclass',
        2206: 'regtype', 1182: 'date[]', 199: 'json[]', 1001: 'bytea[]', 1187: 'interval[]'
        }, type_oid), memory.pg_compat.type_name(type_oid), '???') END;

CREATE OR REPLACE MACRO memory.pg_compat.schema_name(s) AS CASE WHEN s = 'main' THEN 'public' ELSE s END;

CREATE OR REPLACE MACRO memory.pg_compat.regclass_oid(name) AS (
    SELECT min(oid) FROM (
        SELECT table_oid AS oid, table_name AS rel, schema_name FROM duckdb_tables()
            WHERE database_name = 'warehouse'
        UNION ALL SELECT view_oid, view_name, schema_name FROM duckdb_views()
            WHERE database_name = 'warehouse' AND NOT internal
    ) AS r
    WHERE rel = CASE WHEN contains(name, '.') THEN trim(split_part(name, '.', 2), '"')
                     ELSE trim(name, '"') END
      AND (NOT contains(name, '.')
           OR memory.pg_compat.schema_name(schema_name) = trim(split_part(name, '.', 1), '"')));

CREATE OR REPLACE MACRO memory.pg_compat.regclass_name(rel_oid) AS coalesce((
    SELECT CASE WHEN schema_name = 'main' THEN rel ELSE schema_name || '.' || rel END FROM (
        SELECT table_oid AS oid, table_name AS rel, schema_name FROM duckdb_tables()
            WHERE database_name = 'warehouse'
        UNION ALL SELECT view_oid, view_name, schema_name FROM duckdb_views()
            WHERE database_name = 'warehouse' AND NOT internal
        UNION ALL SELECT index_oid, index_name, schema_name FROM duckdb_indexes()
            WHERE database_name = 'warehouse'
    ) AS r WHERE oid = rel_oid LIMIT 1), CAST(rel_oid AS VARCHAR));

CREATE OR REPLACE MACRO memory.pg_compat.regtype_oid(name) AS coalesce((
    SELECT oid FROM (VALUES (16, 'boolean'), (16, 'bool'), (20, 'bigint'), (20, 'int8'),
        (23, 'integer'), (23, 'int4'), (23, 'int'), (21, 'smallint'), (21, 'int2'),
        (25, 'text'), (1043, 'varchar'), (1043, 'character varying'), (701, 'float8'),
        (701, 'double precision'), (700, 'real'), (700, 'float4'), (1700, 'numeric'),
        (1082, 'date'), (1114, 'timestamp'), (1184, 'timestamptz'), (1186, 'interval'),
        (2950, 'uuid'), (17, 'bytea'), (114, 'json'), (3802, 'jsonb'), (26, 'oid'),
        (19, 'name'), (2205, 'regclass')) AS t(oid, n)
    WHERE n = lower(trim(replace(name, 'pg_catalog.', ''), '"')) LIMIT 1), NULL);

CREATE OR REPLACE MACRO memory.pg_compat.to_regtype(name) AS
    memory.pg_compat.regtype_oid(name);

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_userbyid(role_oid) AS 'wanka';

CREATE OR REPLACE MACRO memory.pg_compat.pg_encoding_to_char(encoding) AS 'UTF8';

CREATE OR REPLACE MACRO memory.pg_compat.pg_char_to_encoding(name) AS 6;

CREATE OR REPLACE MACRO memory.pg_compat.array_upper(a, dim) AS
    CASE WHEN dim = 1 AND len(a) > 0 THEN CAST(len(a) AS INTEGER) END;

CREATE OR REPLACE MACRO memory.pg_compat.array_lower(a, dim) AS
    CASE WHEN dim = 1 AND len(a) > 0 THEN 1 END;

CREATE OR REPLACE MACRO memory.pg_compat.array_ndims(a) AS CASE WHEN len(a) > 0 THEN 1 END;

CREATE OR REPLACE MACRO memory.pg_compat._pg_expandarray(a) AS
    unnest(list_transform(a, lambda v, i: {'x': v, 'n': CAST(i AS INTEGER)}));

CREATE OR REPLACE MACRO memory.pg_compat.quote_ident(name) AS CASE
    WHEN regexp_full_match(name, '[a-z_][a-z0-9_$]*')
         AND lower(name) NOT IN (SELECT keyword_name FROM duckdb_keywords()
                                 WHERE keyword_category = 'reserved') THEN name
    ELSE '"' || replace(name, '"', '""') || '"' END;

CREATE OR REPLACE MACRO memory.pg_compat.parse_ident(name) AS
    list_transform(string_split(name, '.'),
                   lambda p: CASE WHEN p LIKE '"%"' THEN replace(p[2:-2], '""', '"') ELSE lower(p) END),
    (name, strict) AS
    list_transform(string_split(name, '.'),
                   lambda p: CASE WHEN p LIKE '"%"' THEN replace(p[2:-2], '""', '"') ELSE lower(p) END);

-- path: the session's search_path schemas that exist (the connection fills it in)
CREATE OR REPLACE MACRO memory.pg_compat.current_schemas(implicit, path) AS
    CASE WHEN implicit AND NOT list_contains(path, 'pg_catalog')
         THEN list_prepend('pg_catalog', path) ELSE path END;

CREATE OR REPLACE MACRO memory.pg_compat.constraint_indexdef(idx) AS (
    SELECT 'CREATE UNIQUE INDEX ' || table_name || '_' || CASE constraint_type
               WHEN 'PRIMARY KEY' THEN 'pkey'
               ELSE array_to_string(constraint_column_names, '_') || '_key' END
           || ' ON ' || memory.pg_compat.schema_name(schema_name) || '.' || table_name
           || ' USING btree (' || array_to_string(constraint_column_names, ', ') || ')'
    FROM duckdb_constraints() WHERE table_oid * 1000 + constraint_index = idx LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_indexdef(idx) AS coalesce(
    (SELECT sql FROM duckdb_indexes() AS i WHERE i.index_oid = idx LIMIT 1),
    memory.pg_compat.constraint_indexdef(idx)),
    (idx, col, pretty) AS coalesce(
    (SELECT CASE WHEN col = 0 THEN sql ELSE expressions[col] END FROM duckdb_indexes() AS i
     WHERE i.index_oid = idx LIMIT 1), memory.pg_compat.constraint_indexdef(idx));

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_expr(expr, relation) AS expr,
    (expr, relation, pretty) AS expr;

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_constraintdef(constraint_oid) AS (
    SELECT constraint_text FROM duckdb_constraints() AS d
    WHERE d.table_oid * 1000 + d.constraint_index = constraint_oid LIMIT 1),
    (constraint_oid, pretty) AS (
    SELECT constraint_text FROM duckdb_constraints() AS d
    WHERE d.table_oid * 1000 + d.constraint_index = constraint_oid LIMIT 1);

-- wanka's functions are macros: parameters and results without a declared type ("any"; a
-- table macro returns SETOF record), as pg_proc says.
CREATE OR REPLACE MACRO memory.pg_compat.pg_get_function_result(fn) AS (
    SELECT CASE WHEN function_type = 'table_macro' THEN 'SETOF record' ELSE '"any"' END
    FROM duckdb_functions() AS f
    WHERE f.function_oid = fn AND f.database_name = 'warehouse' AND NOT f.internal LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_function_arguments(fn) AS (
    SELECT array_to_string(list_transform(parameters, lambda x: x || ' "any"'), ', ')
    FROM duckdb_functions() AS f
    WHERE f.function_oid = fn AND f.database_name = 'warehouse' AND NOT f.internal LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_function_identity_arguments(fn) AS (
    SELECT array_to_string(list_transform(parameters, lambda x: x || ' "any"'), ', ')
    FROM duckdb_functions() AS f
    WHERE f.function_oid = fn AND f.database_name = 'warehouse' AND NOT f.internal LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_triggerdef(t) AS NULL::VARCHAR,
    (t, pretty) AS NULL::VARCHAR;

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_partkeydef(t) AS NULL::VARCHAR;

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_ruledef(r) AS NULL::VARCHAR,
    (r, pretty) AS NULL::VARCHAR;

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_statisticsobjdef_columns(t) AS NULL::VARCHAR;

CREATE OR REPLACE MACRO memory.pg_compat.pg_get_viewdef(v_oid) AS (
    SELECT sql FROM duckdb_views() AS v WHERE v.view_oid = v_oid LIMIT 1),
    (v_oid, pretty) AS (SELECT sql FROM duckdb_views() AS v WHERE v.view_oid = v_oid LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.pg_table_is_visible(rel_oid) AS rel_oid IN (
    SELECT table_oid FROM duckdb_tables() WHERE database_name = 'warehouse' AND schema_name = 'main'
    UNION ALL SELECT view_oid FROM duckdb_views()
        WHERE database_name = 'warehouse' AND schema_name = 'main' AND NOT internal
    UNION ALL SELECT table_oid * 1000 + constraint_index FROM duckdb_constraints()
        WHERE database_name = 'warehouse' AND schema_name = 'main'
    UNION ALL SELECT index_oid FROM duckdb_indexes()
        WHERE database_name = 'warehouse' AND schema_name = 'main');

CREATE OR REPLACE MACRO memory.pg_compat.pg_type_is_visible(type_oid) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.pg_function_is_visible(fn_oid) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.pg_relation_size(rel_oid) AS 0::BIGINT,
    (rel_oid, fork) AS 0::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.pg_total_relation_size(rel_oid) AS 0::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.pg_table_size(rel_oid) AS 0::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.pg_indexes_size(rel_oid) AS 0::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.pg_database_size(db) AS 0::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.pg_tablespace_location(ts) AS '';

CREATE OR REPLACE MACRO memory.pg_compat.pg_is_in_recovery() AS false;

CREATE OR REPLACE MACRO memory.pg_compat.txid_current() AS 1::BIGINT;

CREATE OR REPLACE MACRO memory.pg_compat.obj_description(obj) AS NULL::VARCHAR,
    (obj, catalog) AS (
    SELECT comment FROM duckdb_tables() WHERE table_oid = obj AND catalog = 'pg_class'
    UNION ALL SELECT comment FROM duckdb_views() WHERE view_oid = obj AND catalog = 'pg_class'
    LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.col_description(rel_oid, column_number) AS (
    SELECT comment FROM duckdb_columns()
    WHERE table_oid = rel_oid AND column_index = column_number LIMIT 1);

CREATE OR REPLACE MACRO memory.pg_compat.shobj_description(obj, catalog) AS NULL::VARCHAR;

CREATE OR REPLACE MACRO memory.pg_compat.has_table_privilege(a, b) AS true,
    (a, b, c) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.has_schema_privilege(a, b) AS true,
    (a, b, c) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.has_database_privilege(a, b) AS true,
    (a, b, c) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.has_column_privilege(a, b, c) AS true,
    (a, b, c, d) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.has_function_privilege(a, b) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.pg_has_role(a, b) AS true,
    (a, b, c) AS true;

CREATE OR REPLACE MACRO memory.pg_compat.array_to_string(a, sep) AS array_to_string(a, sep);

CREATE OR REPLACE MACRO memory.pg_compat.pg_size_pretty(n) AS format_bytes(CAST(n AS BIGINT));

CREATE OR REPLACE MACRO memory.pg_compat.attnums(indexes) AS
    list_transform(indexes, lambda i: CAST(i + 1 AS SMALLINT));

CREATE OR REPLACE MACRO memory.pg_compat.pg_relation_is_publishable(rel) AS false;
CREATE OR REPLACE MACRO memory.pg_compat.pg_get_serial_sequence(tbl, col) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO memory.pg_compat.pg_collation_is_visible(c) AS true;

-- The catalog views listed as relations (objects.LISTED): their namespace and its oid
CREATE OR REPLACE MACRO memory.pg_compat.listed_namespace(s) AS
    CASE s WHEN 'pg_compat_is' THEN 'information_schema' ELSE 'pg_catalog' END;

CREATE OR REPLACE MACRO memory.pg_compat.listed_namespace_oid(s) AS (
    SELECT oid FROM duckdb_schemas()
    WHERE database_name = 'system' AND schema_name = memory.pg_compat.listed_namespace(s));

-- PostgreSQL's catalogs are tables, except these, which are views
CREATE OR REPLACE MACRO memory.pg_compat.listed_relkind(s, name) AS
    CASE WHEN s = 'pg_compat_is' OR name IN ('pg_tables', 'pg_views', 'pg_indexes', 'pg_roles',
        'pg_user', 'pg_settings', 'pg_stat_activity', 'pg_stat_user_tables', 'pg_matviews',
        'pg_timezone_names') THEN 'v' ELSE 'r' END;
