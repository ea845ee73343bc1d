-- Expiry (reference §6 "Expiry"): a job may say how late is too late (x-hourglass-expires-after).
-- A run the loader would hand over later than that after its due time goes to the exchange
-- <prefix>.expired instead of to its consumers, and is recorded there: expired_at is when.
-- Both columns are NULL for every existing job, so adding them rewrites nothing.
ALTER TABLE jobs ADD COLUMN expires_after_ms bigint, ADD COLUMN expired_at timestamptz;
COMMENT ON COLUMN jobs.expires_after_ms IS 'x-hourglass-expires-after: a run released later than this after its due time goes to <prefix>.expired instead';
COMMENT ON COLUMN jobs.expired_at IS 'when the last run was sent to <prefix>.expired instead of being released (x-hourglass-expires-after)';
