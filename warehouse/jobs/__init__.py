"""Jobs on GPUs: which job held which GPU when, and how well it used them.

`job_gpus` (sql/schema/0014_job_gpus.sql) is a view over two stores: `gpu_attribution` (tracked;
what the per-job dynamic tables join samples with: scontrol GPU indices, whole nodes, ambiguous
shared nodes, and one 'labels' row per GPU that ever reported, so it changes with new GPUs, not
new jobs) and `wanka.job_label_stretches` (the stretches of scrapes that carried an `hpc_job` or
pod label; nothing derives from it, so label-attributed telemetry never makes a per-job table
recompute). The label rows are derived as telemetry is stored (`warehouse.tsdb.job_labels`);
`attribution` keeps the rest: `after_ingest` after an ingest (a new scontrol capture replaces
the job's earlier rows; whole-node rows follow jobs and nodes, also before a refresh of a table
reading `gpu_attribution` when jobs or nodes changed). The shipped dynamic tables
`job_gpu_usage_daily` (job x GPU x day, an aggregate plan over gpu_metrics joined with
gpu_attribution, by day so that retention can drop raw samples under it), `job_gpu_usage_by_gpu`
and `job_gpu_usage` (chains) hold the measured usage. `stats` is `wanka jobstats` and GET
/v1/jobs/{job_id}/stats: a few rows of those tables and the rules in `wanka.efficiency_rules`.
`hostlist` reads and writes Slurm host lists (`gpu[001-003,007]`).
"""
