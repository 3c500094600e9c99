-- Scheduling dynamic tables: retrying a failed refresh with backoff.
--
-- failures: refreshes that failed in a row (a success resets it to 0). next_attempt_at: the
-- scheduler does not retry a failed table before this time (base 30 s, doubling per failure, at
-- most 1 hour); a named `wanka refresh NAME` ignores it.
ALTER TABLE wanka.dynamic_tables ADD COLUMN failures INTEGER DEFAULT 0;
ALTER TABLE wanka.dynamic_tables ADD COLUMN next_attempt_at TIMESTAMPTZ;
