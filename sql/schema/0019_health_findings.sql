-- The rules `wanka health` gained with its findings (sql/health/*_findings.sql): stragglers and
-- thermal outliers from the per-window means of gpu_windows, corrected errors climbing, silent
-- hosts, and nccl-tests bus bandwidth below the fleet's baseline. A steady trickle of corrected
-- ECC errors is common on a large fleet and not a fault: sbe_rate now asks for 100 increases in a
-- day (it asked for 10), where an admin has not changed it; a climb is sbe_climb's.
INSERT INTO wanka.health_rules VALUES
    ('straggler', 'drain', 3, 3600,
     'SM activity below the job''s own median (robust z < -3.5, at least 7 % slower), this many 5-minute windows in a row'),
    ('thermal_outlier', 'watch', 8, 21600,
     'this many °C hotter than GPUs of the same model at the same power, 2 windows in a row'),
    ('sbe_climb', 'watch', 6, 900,
     'corrected (SBE) ECC errors went up this many times within window_s, far more than the GPU''s own rate in the 6 h before: often before an uncorrectable error or XID 79/94'),
    ('silent_host', 'drain', 300, 300,
     'no sample from any GPU of the host for threshold seconds while the rest of the fleet reports'),
    ('nccl_busbw', 'drain', 0.25, 86400,
     'nccl-tests bus bandwidth this fraction below the fleet''s median for the same collective, model, ranks and size, in every run of a sweep with 2 or more partners')
ON CONFLICT DO NOTHING;
UPDATE wanka.health_rules SET threshold = 100
WHERE rule = 'sbe_rate' AND threshold = 10;
