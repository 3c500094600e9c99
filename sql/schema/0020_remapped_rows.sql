-- Rows remapped against the frame buffer's spares (sql/health/counter_findings.sql): NVIDIA's
-- memory error management note sets the row-remap failure flag (its RMA criterion) on a remap
-- after 512 in all, or on a bank that already has 8 uncorrectable ones; DCGM reports the totals,
-- not the banks, so the rule watches the total against 512. The straggler rule's description
-- says whose spread its z-score is measured against.
INSERT INTO wanka.health_rules VALUES
    ('remapped_rows', 'watch', 256, 2592000,
     'rows remapped so far (correctable + uncorrectable) reached this many of the 512 a GPU can remap before its row-remap failure flag (NVIDIA: RMA)')
ON CONFLICT DO NOTHING;
UPDATE wanka.health_rules
SET description = 'SM activity below the job''s own median (robust z < -3.5 against the job''s own spread, at least 7 % slower), this many 5-minute windows in a row'
WHERE rule = 'straggler'
    AND description = 'SM activity below the job''s own median (robust z < -3.5, at least 7 % slower), this many 5-minute windows in a row';
