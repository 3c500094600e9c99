-- Golden cases for warehouse.security.policy: a header line, then the SQL (up to the next header).
-- Header: "-- ROLE allowed" or "-- ROLE refused: TEXT" (TEXT must appear in the message).

-- reader allowed
select 1
-- reader allowed
WITH x AS (SELECT * FROM jobs) SELECT count(*) FROM x
-- reader allowed
explain select * from gpu_metrics where value > 1
-- reader allowed
EXPLAIN ANALYZE select 1
-- reader allowed
show tables
-- reader allowed
describe jobs
-- reader allowed
summarize nodes
-- reader allowed
select * from wanka.dynamic_tables
-- reader allowed
select * from information_schema.columns
-- reader allowed
select * from range(10) r join generate_series(1, 3) g on true
-- reader allowed
select gpu_power_w(700, 0.5, 60), pcie_gen(4, 16)
-- reader allowed
-- a comment; with a semicolon
select 'DROP TABLE jobs; COPY x TO y'
-- reader allowed
select 1 -- ; drop table jobs
-- reader allowed
select * from warehouse.main.jobs
-- reader refused: holds 2
SELECT 1; DROP TABLE jobs
-- reader refused: holds 2
select 1; select 2
-- reader refused: COPY is refused
COPY (select 1) TO '/tmp/x'
-- reader refused: COPY is refused
copy jobs to '/tmp/jobs.csv'
-- reader refused: read_csv() is refused
select * from read_csv('/etc/passwd')
-- reader refused: read_csv_auto() is refused
SELECT * FROM READ_CSV_AUTO('/etc/passwd')
-- reader refused: read_text() is refused
select content from read_text('/etc/passwd')
-- reader refused: read_parquet() is refused
select * from read_parquet('/tmp/*.parquet')
-- reader refused: glob() is refused
select * from glob('*')
-- reader refused: reading the file
select * from '/etc/passwd'
-- reader refused: reading the file
select * from "data.csv"
-- reader refused: query() is refused
select * from query('drop table jobs')
-- reader refused: json_execute_serialized_sql() is refused
select * from json_execute_serialized_sql('{}')
-- reader refused: read_blob() is refused
select (select content from read_blob('/etc/shadow'))
-- reader refused: read_csv() is refused
select 1 where exists (select * from read_csv('/etc/passwd'))
-- reader refused: read_csv() is refused
describe select * from read_csv('/etc/passwd')
-- reader refused: ATTACH is refused
ATTACH '/tmp/other.duckdb' AS other
-- reader refused: DETACH is refused
detach warehouse
-- reader refused: LOAD is refused
INSTALL httpfs
-- reader refused: LOAD is refused
LOAD httpfs
-- reader refused: SET is refused
SET threads = 1
-- reader refused: SET is refused
set enable_external_access = true
-- reader refused: SET is refused
use memory
-- reader refused: PRAGMA is refused
PRAGMA database_list
-- reader refused: CALL is refused
CALL pragma_version()
-- reader refused: CREATE is refused
CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')
-- reader refused: duckdb_secrets() is refused
select * from duckdb_secrets()
-- reader refused: data-modifying WITH
WITH x AS (DELETE FROM jobs RETURNING *) SELECT * FROM x
-- reader refused: EXPLAIN of COPY
EXPLAIN ANALYZE COPY (select 1) TO '/tmp/x'
-- reader refused: EXPLAIN of DELETE
/* hidden */ ExPlAiN  analyze delete from jobs
-- reader refused: INSERT is refused
insert into jobs (job_id) values ('1')
-- reader refused: UPDATE is refused
UpDaTe jobs SET state = 'x'
-- reader refused: DELETE is refused
/* select */ DELETE FROM jobs
-- reader refused: DELETE is refused
truncate jobs
-- reader refused: DROP is refused
drop table jobs
-- reader refused: ALTER is refused
alter table jobs add column x int
-- reader refused: EXPORT is refused
EXPORT DATABASE '/tmp/dump'
-- reader refused: MULTI is refused
pivot jobs on state
-- reader refused: wanka.users is refused
select * from wanka.users
-- reader refused: wanka.users is refused
SeLeCt/**/*/**/FrOm/**/"WANKA"."USERS"
-- reader refused: wanka.tokens is refused
select * from warehouse.wanka.tokens
-- reader refused: database memory is refused
select * from memory.main.x
-- reader refused: nextval() is refused
select nextval('wanka.batch_seq')
-- reader refused: getenv() is refused
select getenv('HOME')
-- reader refused: VACUUM is refused
vacuum
-- reader refused: CALL is refused
checkpoint
-- reader refused: DYNAMIC TABLE
REFRESH DYNAMIC TABLE gpu_hourly_host
-- writer allowed
insert into jobs (job_id) values ('1')
-- writer allowed
delete from gpu_metrics where ts < now() - interval 30 day
-- writer allowed
update jobs set state = 'FAILED' where job_id = '1'
-- writer allowed
select 1; select 2
-- writer allowed
REFRESH DYNAMIC TABLE gpu_hourly_host
-- writer refused: read_csv() is refused
insert into jobs select * from read_csv('/etc/passwd')
-- writer refused: wanka.users is refused
update wanka.users set role = 'admin'
-- writer refused: base tables only
delete from wanka.ingest_batches
-- writer refused: DROP is refused
insert into jobs (job_id) values ('1'); drop table jobs
-- writer refused: CREATE is refused
create table x (a int)
-- writer refused: only an admin may CREATE a DYNAMIC TABLE
CREATE DYNAMIC TABLE d WITH (freshness = '1 hour') AS SELECT 1 AS x
-- writer refused: COPY is refused
copy jobs from '/tmp/jobs.csv'
-- admin allowed
create table scratch (a int)
-- admin allowed
alter table jobs add column note varchar
-- admin allowed
CREATE DYNAMIC TABLE d WITH (freshness = '1 hour') AS SELECT 1 AS x
-- admin allowed
checkpoint
-- admin refused: COPY is refused
COPY jobs TO '/tmp/x.csv'
-- admin refused: secrets are never managed
create persistent secret s (type s3)
-- admin refused: secrets are never managed
DROP SECRET s
-- admin refused: wanka.users is refused
drop table wanka.users
-- admin refused: read_csv() is refused
create view v as select * from read_csv('/etc/passwd')
-- admin refused: SET is refused
set lock_configuration = false
-- admin refused: LOAD is refused
load '/tmp/evil.duckdb_extension'
