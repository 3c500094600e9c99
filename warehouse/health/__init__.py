"""GPU and node health: which to watch, drain or replace, each with the rules that fired and their
evidence, and how well those rules find faults whose truth is known.

`findings` is `wanka health` and GET /v1/health: the current rows of the dynamic table
`health_findings`, whose query is sql/health/findings.sql with the rule files it `@include`s
(`warehouse.kernel.catalog.expand_includes`): events (`events_findings.sql`), per-window peers
(`window_findings.sql`: stragglers, thermal outliers, over the incremental `gpu_windows`),
silence (`silent_findings.sql`), nccl-tests probes (`nccl_findings.sql`) and the newest counters
(`counter_findings.sql`). Thresholds, windows and states are rows of `wanka.health_rules`; a
GPU's state is the worst of its findings', judged as of the newest telemetry, not the wall
clock. `evaluate` loads a simulation with injected faults (`warehouse.simulate.faults`, nccl
probes, the step times a slow GPU lengthens) and scores the findings against its truth per
fault kind.
"""
