"""What the demo warehouse holds, asked of `wanka serve` by psycopg2 directly (no Superset in
between): the figures each Superset step is compared with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.bi.harness import Wanka

# tables a person browsing the demo expects to find in each schema
WANTED = {
    "public": {"gpu_metrics", "jobs", "job_gpu_usage", "job_gpu_usage_daily", "gpu_metrics_1m"},
    "wanka": {"dynamic_tables", "refresh_history"},
    "information_schema": {"tables", "columns", "schemata", "views"},
}

RELATIONS = """
    SELECT table_schema, table_name, table_type FROM information_schema.tables
    WHERE table_schema IN ('public', 'wanka', 'information_schema')
"""
USAGE_COLUMNS = """
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name = 'job_gpu_usage' ORDER BY ordinal_position
"""
JOBS = "SELECT count(*), date_trunc('hour', max(submit_at)) FROM jobs"
JOBS_SINCE = (
    "SELECT count(*) FROM jobs WHERE submit_at >= %(start)s "
    "AND submit_at < %(end)s + INTERVAL '1 hour'"
)
GPUS_BY_STATE = "SELECT state, sum(gpus) FROM jobs WHERE gpus > 0 GROUP BY state"
AVG_ELAPSED = """
    SELECT gpu_type, avg(elapsed_s) FROM jobs
    WHERE state = 'COMPLETED' AND gpus >= 1 AND gpu_type IS NOT NULL GROUP BY gpu_type
"""


@dataclass(frozen=True)
class Truth:
    schemas: set[str]  # every nspname in pg_namespace, pg_catalog included
    relations: dict[str, dict[str, str]]  # schema -> name -> "table" or "view"
    wanted: dict[str, set[str]]
    columns: list[str]  # of public.job_gpu_usage, in order
    jobs: int
    last_hour: datetime  # the hour of the last submitted job
    jobs_since: dict[datetime, int]  # jobs from the start of the last hour, and of the last day
    usage_rows: int
    gpus_by_state: dict[str, int]
    avg_elapsed_by_gpu_type: dict[str, float]

    @classmethod
    def read(cls, wanka: Wanka) -> Truth:
        import psycopg2

        dsn = (
            f"host=127.0.0.1 port={wanka.pg_port} dbname=wanka user={wanka.user} "
            f"password={wanka.password} sslmode=disable"
        )
        with psycopg2.connect(dsn) as conn, conn.cursor() as cur:

            def rows(sql: str, **params: Any) -> list[tuple[Any, ...]]:
                cur.execute(sql, params)
                return list(cur.fetchall())

            relations: dict[str, dict[str, str]] = {
                "public": {},
                "wanka": {},
                "information_schema": {},
            }
            for schema, name, kind in rows(RELATIONS):
                relations[schema][name] = "view" if kind == "VIEW" else "table"
            jobs, last_hour = rows(JOBS)[0]
            return cls(
                schemas={name for (name,) in rows("SELECT nspname FROM pg_namespace")},
                relations=relations,
                wanted=WANTED,
                columns=[name for (name,) in rows(USAGE_COLUMNS)],
                jobs=int(jobs),
                last_hour=last_hour,
                jobs_since={
                    start: int(rows(JOBS_SINCE, start=start, end=last_hour)[0][0])
                    for start in (last_hour, last_hour - timedelta(hours=23))
                },
                usage_rows=int(rows("SELECT count(*) FROM job_gpu_usage")[0][0]),
                gpus_by_state={state: int(n) for state, n in rows(GPUS_BY_STATE)},
                avg_elapsed_by_gpu_type={k: float(v) for k, v in rows(AVG_ELAPSED)},
            )
