"""The telemetry store: one way in (`append`), one relation of samples out (`relations`), and
its own upkeep (`upkeep`), behind the `gpu_metrics` view users read and write.

`gpu_metrics` keeps the columns and order it always had, over a series dictionary (one row per
distinct metric, host, gpu, uuid, model and labels, the labels exactly as they arrived: a label
matcher is a filter on it alone) and narrow samples (series_id, ts, value, batch_id: no string
per row); sql/schema/0012_compact_telemetry.sql says why. Series ids are taken in (metric, host,
gpu, ...) order, so a metric is a narrow id range and DuckDB's join filter prunes the samples'
row groups by it. `relations` names what readers read (PromQL's source, the dynamic-table DML,
the health reads); no module outside this package names the physical tables
(tests/warehouse/tsdb/test_seam.py).

`append` is the only writer: gpu_metrics-shaped Arrow rows (ingest, the simulator) go through
`write` (label sets found in Arrow by `codes`, so the SQL meets each once), labelled series and
samples (remote_write, scrape rounds) and `exactly_once` appends through `dedupe` (a sample whose
series and timestamp are stored already is not stored again, so a retried delivery stores
nothing twice). The derivations run inside it, once per batch: the job labels (`job_labels`:
a GPU's first 'labels' row in gpu_attribution, the stretches of scrapes carrying a job label)
and the GPU events (`events`: XID changes, ECC / remap / NVLink counter increases, throttle
reason bits, silence; rules in sql/health/). `dml` rewrites an INSERT, UPDATE, DELETE or
TRUNCATE of gpu_metrics from any SQL face onto the store in the caller's transaction.

`upkeep` is what the serve process schedules: `retention` drops raw samples older than a rule
(`ALTER TABLE gpu_metrics SET (retention = '14 days')`, `wanka retention`), a day per
transaction, unlogged; then `tiers.fold` brings `gpu_metrics_1m` / `gpu_metrics_1h` up to the
new batches (writers only append; an UPDATE or DELETE notes what it touched in
`wanka.tier_dirty`, rebuilt on the next fold).
"""
