"""Fault history and risk: what failed where (`node_faults`), the evidence a risk score reads
(`node_signals`, kept by `signals` in each ingest's transaction), and the statistics of the
fleet's reliability (`rates`: failure rates, the fleet's rate that `job_interruption_risk`
reads; `weibull`: a right-censored Weibull fit).

The tables are declared in sql/schema/0023_node_faults.sql, the risk score in
sql/dynamic/node_risk.sql, the analyses in sql/analyses/fault_*.sql; docs/faults.md says what
each means and how the predictors were judged (bench/bench_predict.py).
"""
