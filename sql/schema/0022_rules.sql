-- Prometheus rule groups as `wanka serve` evaluates them (warehouse/rules): what
-- /api/v1/rules and /api/v1/alerts answer, readable in SQL by every role. The serve process
-- rewrites a group's rows after each of its evaluations (service/serve/rules.py) and drops
-- those of groups a reload removed; groups change only through the rule files and a reload.
CREATE TABLE wanka.rules (
    group_file          VARCHAR NOT NULL,
    group_name          VARCHAR NOT NULL,
    position            INTEGER NOT NULL,   -- the rule's place in its group, from 1
    name                VARCHAR NOT NULL,   -- the recorded metric or the alert's name
    type                VARCHAR NOT NULL,   -- 'recording' | 'alerting'
    query               VARCHAR NOT NULL,
    interval_s          DOUBLE NOT NULL,    -- the group's evaluation interval
    duration_s          DOUBLE,             -- `for` (alerting rules)
    keep_firing_for_s   DOUBLE,
    labels              VARCHAR,            -- JSON object (templates unexpanded)
    annotations         VARCHAR,            -- JSON object (templates unexpanded)
    state               VARCHAR,            -- 'inactive' | 'pending' | 'firing' (alerting rules)
    health              VARCHAR NOT NULL,   -- 'unknown' | 'ok' | 'err'
    last_error          VARCHAR,
    last_evaluation     TIMESTAMPTZ,        -- the time it evaluated at (t - rule_query_offset)
    evaluation_s        DOUBLE              -- how long its last evaluation took
);

CREATE TABLE wanka.alerts (
    group_file          VARCHAR NOT NULL,
    group_name          VARCHAR NOT NULL,
    alertname           VARCHAR NOT NULL,
    labels              VARCHAR NOT NULL,   -- JSON object: the alert's labels, alertname included
    annotations         VARCHAR,            -- JSON object, expanded
    state               VARCHAR NOT NULL,   -- 'pending' | 'firing' | 'inactive' (resolved, kept 15 min)
    active_at           TIMESTAMPTZ NOT NULL,
    fired_at            TIMESTAMPTZ,
    resolved_at         TIMESTAMPTZ,
    value               DOUBLE              -- the expression's value at the last evaluation
);
