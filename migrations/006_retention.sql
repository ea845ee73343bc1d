-- Retention (--retention, default 7d): one-shot jobs that ended (done or cancelled) are deleted
-- in small batches once they are older than the retention. This index holds only those rows,
-- ordered by when they ended (updated_at is set by every state change), so each batch reads
-- the oldest ended rows directly, however many pending rows the table holds.
CREATE INDEX jobs_ended_at ON jobs (updated_at)
    WHERE state IN ('done', 'cancelled') AND cron IS NULL;
