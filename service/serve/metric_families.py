"""Every series family /metrics shows, declared once: its name, its type and its help text.

Sessions, the writer, the scheduler, the feeds and the /metrics route count or read their series
through these constants, never through a name typed where it is counted: a name cannot be
spelt two ways or carry two help texts, and declaring one twice fails at import (`_declare`).
The constant's class says how it may be used (`Metrics.count` takes a `Counter` only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar


@dataclass(frozen=True)
class Family:
    """A metric family as the exposition format's `# HELP` and `# TYPE` lines name it."""

    name: str
    help: str
    kind: ClassVar[str]


class Counter(Family):
    """Kept in memory and only ever added to (`Metrics.count`)."""

    kind = "counter"


class Gauge(Family):
    """Read when /metrics is scraped (the route and the server's parts hand in their values)."""

    kind = "gauge"


class Histogram(Family):
    """Bucketed observations (`Metrics.observe_query`)."""

    kind = "histogram"


F = TypeVar("F", bound=Family)

#: name -> family, in the order declared below.
DECLARED: dict[str, Family] = {}


def _declare(family: F) -> F:
    if family.name in DECLARED:
        raise ValueError(f"metric {family.name} is declared twice")
    DECLARED[family.name] = family
    return family


# -- queries (service/serve/session.py) -------------------------------------------------------
QUERIES = _declare(Counter("wanka_queries_total", "Queries answered."))
QUERY_ERRORS = _declare(Counter("wanka_query_errors_total", "Queries that failed."))
QUERY_DURATION = _declare(
    Histogram("wanka_query_duration_seconds", "Time from receiving a query to its last byte.")
)

# -- writes on request (service/serve/writer.py) ----------------------------------------------
INGEST_ROWS = _declare(Counter("wanka_ingest_rows_total", "Rows ingested."))
INGEST_REJECTS = _declare(Counter("wanka_ingest_rejects_total", "Lines rejected by ingest."))
REMOTE_WRITE_SAMPLES = _declare(
    Counter("wanka_remote_write_samples_total", "Remote-write samples stored.")
)
REMOTE_WRITE_NOT_STORED = _declare(
    Counter(
        "wanka_remote_write_not_stored_total",
        "Remote-write samples received but not stored as values, by reason.",
    )
)

REMOTE_WRITE_COMMITS = _declare(
    Counter(
        "wanka_remote_write_commits_total",
        "Transactions that stored remote_write requests (each request is in one).",
    )
)
REMOTE_WRITE_COMMITTED = _declare(
    Counter(
        "wanka_remote_write_committed_requests_total",
        "Remote-write requests stored; over wanka_remote_write_commits_total, the mean group.",
    )
)

# -- the write gate (service/serve/writes.py) -------------------------------------------------
WRITE_GATE_WAIT = _declare(
    Counter(
        "wanka_write_gate_wait_seconds_total",
        "Seconds writers waited for the write gate, by the waiting writer's kind.",
    )
)
WRITE_GATE_HELD = _declare(
    Counter(
        "wanka_write_gate_held_seconds_total",
        "Seconds the write gate was held, by the holding writer's kind.",
    )
)

# -- the scheduler (service/serve/scheduler.py) -----------------------------------------------
SCHEDULER_WAITS = _declare(
    Counter(
        "wanka_scheduler_waits_total",
        "Scheduler passes skipped while another write held the database.",
    )
)
SCHEDULER_ERRORS = _declare(
    Counter("wanka_scheduler_errors_total", "Scheduler passes that failed.")
)
JOB_RUNS = _declare(Counter("wanka_scheduled_job_runs_total", "Scheduled job runs, by job."))
JOB_FAILURES = _declare(
    Counter("wanka_scheduled_job_failures_total", "Scheduled job runs that failed, by job.")
)
JOB_LAST_DURATION = _declare(
    Gauge("wanka_scheduled_job_last_duration_seconds", "How long the job's last run took.")
)
RETENTION_ROWS_DROPPED = _declare(
    Counter("wanka_retention_rows_dropped_total", "Raw rows dropped by retention rules.")
)
REFRESHES = _declare(Counter("wanka_refreshes_total", "Dynamic table refreshes by the scheduler."))

# -- live feeds (service/serve/feeds.py) ------------------------------------------------------
SCRAPE_CONFIG_ERRORS = _declare(
    Counter("wanka_scrape_config_errors_total", "Scrape config rereads refused.")
)
SCRAPE_ROUND_ERRORS = _declare(
    Counter("wanka_scrape_round_errors_total", "Scrape rounds not stored.")
)
SCRAPE_ROUNDS = _declare(Counter("wanka_scrape_rounds_total", "Scrape rounds stored."))
SCRAPE_SAMPLES = _declare(Counter("wanka_scrape_samples_total", "Scraped samples stored."))
SCRAPE_TARGET_UP = _declare(
    Gauge("wanka_scrape_target_up", "1 when the target's last scrape worked, else 0.")
)
SCRAPE_TARGET_DURATION = _declare(
    Gauge("wanka_scrape_target_duration_seconds", "The target's last scrape.")
)
SCRAPE_TARGET_SAMPLES = _declare(
    Gauge("wanka_scrape_target_samples", "Samples of the target's last scrape.")
)
SACCT_POLLS = _declare(Counter("wanka_sacct_polls_total", "Slurm polls, by outcome."))
SACCT_ROWS = _declare(Counter("wanka_sacct_rows_total", "Rows ingested by Slurm polls."))
SACCT_FAILURES = _declare(
    Gauge("wanka_sacct_consecutive_failures", "Slurm polls failed since the last that worked.")
)

# -- read at each scrape (service/http/routes_catalog.py) -------------------------------------
DYNAMIC_TABLE_LAG = _declare(
    Gauge("wanka_dynamic_table_lag_seconds", "Seconds since the data a dynamic table reflects.")
)
DUCKDB_MEMORY = _declare(
    Gauge(
        "wanka_duckdb_memory_bytes",
        "Memory DuckDB's buffer manager holds, by tag (bounded by --memory-limit).",
    )
)
EVICTION_NODES = _declare(
    Gauge(
        "wanka_duckdb_eviction_queue_nodes",
        "Entries of DuckDB's buffer eviction queues, by queue type and state (dead: of a freed "
        "or re-queued buffer, holding its handle's memory, outside --memory-limit, until purged).",
    )
)
PYTHON_BLOCKS = _declare(
    Gauge(
        "wanka_python_allocated_blocks",
        "Objects the Python allocator holds (sys.getallocatedblocks).",
    )
)
ARROW_MEMORY = _declare(
    Gauge(
        "wanka_arrow_memory_bytes",
        "Memory Arrow's default pool has allocated and not freed, by allocator.",
    )
)
PROMQL_CACHE_ANSWERS = _declare(
    Counter(
        "wanka_promql_cache_answers_total",
        "PromQL range answers, by how the result cache made them: hit (no step evaluated), "
        "partial (the newest steps evaluated), miss, bypass (not kept).",
    )
)
PROMQL_CACHE_POINTS = _declare(
    Gauge("wanka_promql_cache_points", "Points of range answers the PromQL result cache keeps.")
)
RESIDENT_MEMORY = _declare(
    Gauge("process_resident_memory_bytes", "Resident memory of the process.")
)

# -- the process and its configuration (service/serve/process.py, service/config/reload.py) --
BUILD_INFO = _declare(
    Gauge(
        "wanka_build_info",
        "Always 1: the version and git revision wanka was built from, and DuckDB's version.",
    )
)
PROCESS_START = _declare(
    Gauge("process_start_time_seconds", "Start time of the process since the Unix epoch.")
)
CONFIG_RELOAD_OK = _declare(
    Gauge(
        "wanka_config_last_reload_successful",
        "Whether the last reading of the configuration file worked (1) or was refused (0).",
    )
)
CONFIG_RELOAD_AT = _declare(
    Gauge(
        "wanka_config_last_reload_success_timestamp_seconds",
        "When the configuration file was last read without error.",
    )
)
DYNAMIC_TABLE_TARGET = _declare(
    Gauge(
        "wanka_dynamic_table_freshness_target_seconds",
        "A dynamic table's freshness target: its lag should stay below it.",
    )
)
REMOTE_WRITE_LAG = _declare(
    Gauge(
        "wanka_remote_write_lag_seconds",
        "Age of the newest sample of the last remote_write batch when it was committed.",
    )
)
SACCT_LAST_SUCCESS = _declare(
    Gauge("wanka_sacct_last_success_timestamp_seconds", "When a Slurm poll last worked.")
)

# -- rules and alerts (service/serve/rules.py), under Prometheus's own names -------------------
NOTIFICATIONS_DROPPED = _declare(
    Counter(
        "prometheus_notifications_dropped_total",
        "Alerts dropped: queue full or no Alertmanager took them.",
    )
)
NOTIFICATIONS_SENT = _declare(
    Counter("prometheus_notifications_sent_total", "Alerts posted to an Alertmanager.")
)
NOTIFICATIONS_ERRORS = _declare(
    Counter("prometheus_notifications_errors_total", "Posts to an Alertmanager that failed.")
)
NOTIFICATIONS_QUEUE_LENGTH = _declare(
    Gauge("prometheus_notifications_queue_length", "Alerts waiting to be sent.")
)
NOTIFICATIONS_QUEUE_CAPACITY = _declare(
    Gauge("prometheus_notifications_queue_capacity", "The capacity of the alert queue.")
)
NOTIFICATIONS_LATENCY = _declare(
    Gauge("prometheus_notifications_latency_seconds", "The last post to the Alertmanager took.")
)
ALERTMANAGERS_DISCOVERED = _declare(
    Gauge("prometheus_notifications_alertmanagers_discovered", "Alertmanagers configured.")
)
RULE_EVALUATIONS = _declare(
    Counter("prometheus_rule_evaluations_total", "Rule evaluations, by rule group.")
)
RULE_EVALUATION_FAILURES = _declare(
    Counter("prometheus_rule_evaluation_failures_total", "Rule evaluations that failed.")
)
RULE_GROUP_LAST_DURATION = _declare(
    Gauge("prometheus_rule_group_last_duration_seconds", "The group's last evaluation took.")
)
RULE_GROUP_INTERVAL = _declare(
    Gauge("prometheus_rule_group_interval_seconds", "The group's evaluation interval.")
)
RULE_GROUP_ITERATIONS_MISSED = _declare(
    Counter(
        "prometheus_rule_group_iterations_missed_total", "Evaluations skipped: the last ran late."
    )
)
