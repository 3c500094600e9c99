-- interruption_text_causes: The interruption cause of each kernel line and failed job's message, by XID join where a code is given and by the nearest labelled example where not.
--
-- Free text from kernel_messages (`wanka ingest kernel-log`) and job_events (the detail of
-- 'failure', 'interruption', 'xid' and 'xid_failure' events). A text that names an XID (an NVRM Xid
-- line, or 'Xid 79' in a message) takes the cause interruption_xids gives the code: exact codes
-- stay joins, never a model's guess. Any other text is filed by ai_classify under the nearest of
-- the labelled examples of sql/analyses/parts/cause_examples.sql (the embedded model, offline);
-- how well that does on public text: interruption_text_accuracy. Kernel lines that name no
-- hardware or driver (most of a log) are left out unless $all_kernel_lines.
--
-- Parameters:
--   $all_kernel_lines         BOOLEAN = false   classify every kernel line, not only those of NVRM, mlx5, PCIe errors, machine checks, I/O errors
--   $limit                    INTEGER = 1000    rows at most, newest first
-- Columns:
--   origin                    'kernel' (kernel_messages) or 'job' (job_events)
--   ts                        when it was logged
--   host                      where
--   job_id                    the job, for a job's message
--   text                      the line or message
--   xid                       the XID it names, if any
--   cause                     the interruption cause (interruption_causes.cause)
--   how                       'xid' (joined through interruption_xids) or 'nearest example'
WITH @include(parts/cause_examples.sql), texts AS (
    SELECT 'kernel' AS origin, ts, host, NULL::VARCHAR AS job_id, message AS text, xid
    FROM kernel_messages
    WHERE $all_kernel_lines OR xid IS NOT NULL OR regexp_matches(message,
        '(?i)NVRM|nvidia|mlx5|infiniband|pcie|aer:|machine check|mce:|i/o error|ext4-fs error|xfs|nvme|edac|thermal')
    UNION ALL
    SELECT 'job', ts, host, job_id, detail,
           coalesce(TRY_CAST(regexp_extract(detail, '(?i)xid[^0-9]{0,24}(\d+)', 1) AS INTEGER),
                    CASE WHEN event IN ('xid', 'xid_failure') THEN CAST(value AS INTEGER) END)
    FROM job_events
    WHERE event IN ('failure', 'interruption', 'xid', 'xid_failure') AND coalesce(detail, '') <> ''
), newest AS (
    SELECT * FROM texts ORDER BY ts DESC NULLS LAST, text LIMIT $limit
)
SELECT n.origin, n.ts, n.host, n.job_id, n.text, n.xid,
       coalesce(x.cause, ai_classify(n.text, e.labels, e.examples)) AS cause,
       CASE WHEN x.cause IS NOT NULL THEN 'xid' ELSE 'nearest example' END AS how
FROM newest AS n
CROSS JOIN cause_examples AS e
LEFT JOIN interruption_xids AS x ON x.xid = n.xid
ORDER BY n.ts DESC NULLS LAST, n.text
