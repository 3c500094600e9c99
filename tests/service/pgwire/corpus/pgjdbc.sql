-- pgjdbc (PgDatabaseMetaData, TypeInfoCache, connection start), the SQL DBeaver, Metabase and
-- Tableau run through it. Shapes follow pgjdbc 42.x sources; patterns filled in for `public`.

-- startup extra_float_digits
SET extra_float_digits = 3;

-- startup application_name
SET application_name = 'PostgreSQL JDBC Driver';

-- getSchemas
SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace
WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1])
  AND (nspname !~ '^pg_toast_temp_' OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))
ORDER BY TABLE_SCHEM;

-- getTables
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,
 CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'
 WHEN true THEN CASE WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind
   WHEN 'r' THEN 'SYSTEM TABLE' WHEN 'v' THEN 'SYSTEM VIEW' WHEN 'i' THEN 'SYSTEM INDEX' ELSE NULL END
   WHEN n.nspname = 'pg_toast' THEN CASE c.relkind WHEN 'r' THEN 'SYSTEM TOAST TABLE'
   WHEN 'i' THEN 'SYSTEM TOAST INDEX' ELSE NULL END
   ELSE CASE c.relkind WHEN 'r' THEN 'TEMPORARY TABLE' WHEN 'p' THEN 'TEMPORARY TABLE'
   WHEN 'i' THEN 'TEMPORARY INDEX' WHEN 'S' THEN 'TEMPORARY SEQUENCE' WHEN 'v' THEN 'TEMPORARY VIEW'
   ELSE NULL END END
 WHEN false THEN CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE'
   WHEN 'i' THEN 'INDEX' WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'c' THEN 'TYPE'
   WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END
 ELSE NULL END AS TABLE_TYPE, d.description AS REMARKS,
 '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME,
 '' AS REF_GENERATION
FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c
LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0 and d.classoid = 'pg_class'::regclass)
WHERE c.relnamespace = n.oid AND n.nspname LIKE 'public' AND c.relname LIKE '%'
 AND (false OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )
      OR ( c.relkind = 'v' AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' ))
ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME;

-- getColumns
SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,
 a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum,
 nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,
 pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype
 FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid)
 JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)
 LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)
 LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
 LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')
 LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')
 WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped
 AND n.nspname LIKE 'public' AND c.relname LIKE 'nodes') c WHERE true
ORDER BY nspname,c.relname,attnum;

-- getPrimaryKeys
SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, result.KEY_SEQ, result.PK_NAME
FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,
  (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,
  information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM
  FROM pg_catalog.pg_class ct JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)
  JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)
  JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)
  JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid)
  WHERE true AND n.nspname = E'public' AND ct.relname = E'nodes' AND i.indisprimary ) result
WHERE result.A_ATTNUM = (result.KEYS).x
ORDER BY result.table_name, result.pk_name, result.key_seq;

-- getIndexInfo
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, ct.relname AS TABLE_NAME, NOT i.indisunique AS NON_UNIQUE,
  NULL AS INDEX_QUALIFIER, ci.relname AS INDEX_NAME,
  CASE i.indisclustered WHEN true THEN 1 ELSE CASE am.amname WHEN 'hash' THEN 2 ELSE 3 END END AS TYPE,
  (information_schema._pg_expandarray(i.indkey)).n AS ORDINAL_POSITION,
  ci.reltuples AS CARDINALITY, ci.relpages AS PAGES,
  pg_catalog.pg_get_expr(i.indpred, i.indrelid) AS FILTER_CONDITION
FROM pg_catalog.pg_class ct JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)
  JOIN pg_catalog.pg_index i ON (ct.oid = i.indrelid)
  JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid)
  JOIN pg_catalog.pg_am am ON (ci.relam = am.oid)
WHERE true AND n.nspname = E'public' AND ct.relname = E'nodes'
ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION;

-- getImportedKeys
SELECT NULL::text AS PKTABLE_CAT, pkn.nspname AS PKTABLE_SCHEM, pkc.relname AS PKTABLE_NAME,
  pka.attname AS PKCOLUMN_NAME, NULL::text AS FKTABLE_CAT, fkn.nspname AS FKTABLE_SCHEM,
  fkc.relname AS FKTABLE_NAME, fka.attname AS FKCOLUMN_NAME, pos.n AS KEY_SEQ,
  CASE con.confupdtype WHEN 'c' THEN 0 WHEN 'n' THEN 2 WHEN 'd' THEN 4 WHEN 'r' THEN 1 WHEN 'p' THEN 1 WHEN 'a' THEN 3 ELSE NULL END AS UPDATE_RULE,
  con.conname AS FK_NAME, pkic.relname AS PK_NAME
FROM pg_catalog.pg_namespace pkn, pg_catalog.pg_class pkc, pg_catalog.pg_attribute pka,
  pg_catalog.pg_namespace fkn, pg_catalog.pg_class fkc, pg_catalog.pg_attribute fka,
  pg_catalog.pg_constraint con, pg_catalog.generate_series(1, 32) pos(n),
  pg_catalog.pg_class pkic
WHERE pkn.oid = pkc.relnamespace AND pkc.oid = pka.attrelid AND pka.attnum = con.confkey[pos.n]
  AND con.confrelid = pkc.oid AND fkn.oid = fkc.relnamespace AND fkc.oid = fka.attrelid
  AND fka.attnum = con.conkey[pos.n] AND con.conrelid = fkc.oid AND con.contype = 'f'
  AND pkic.relkind = 'i' AND pkic.oid = con.conindid AND fkn.nspname = E'public' AND fkc.relname = E'jobs'
ORDER BY pkn.nspname,pkc.relname, con.conname,pos.n;

-- TypeInfoCache by oid
SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 1184;

-- TypeInfoCache array delimiter
SELECT t.typdelim FROM pg_catalog.pg_type t WHERE t.oid = 1009;

-- TypeInfoCache element type
SELECT e.oid, n.nspname = ANY(current_schemas(true)), n.nspname, e.typname FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_type e ON t.typelem = e.oid JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid
WHERE t.oid = 1007;

-- getTypeInfo
SELECT t.typname,t.oid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON (t.typnamespace = n.oid)
WHERE n.nspname != 'pg_toast' AND (t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid));

-- DBeaver database by name
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='wanka';

-- DBeaver setting
SELECT setting, reset_val FROM pg_catalog.pg_settings WHERE name = 'search_path';

-- DBeaver schemas with descriptions
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
ORDER BY nspname;

-- DBeaver current schema and user
SELECT current_schema(),session_user;

-- DBeaver tables of a schema
SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,
  pg_catalog.pg_get_partkeydef(c.oid) as partition_key
FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass
WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public') AND c.relkind not in ('i','I','c');

-- DBeaver roles
SELECT a.oid,a.* FROM pg_catalog.pg_roles a ORDER BY a.rolname;

-- Metabase time zone
SHOW TIMEZONE;

-- Metabase current timestamp
SELECT current_timestamp;
