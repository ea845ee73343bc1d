-- Schedule controls (reference §3.3, §5): a recurring job can be paused (state `paused`: the
-- claim, which reads only `pending` rows, passes it by) and resumed; x-cron-catchup says what
-- its missed runs become; a cancel by routing-key prefix walks the jobs of that prefix in
-- (routing_key, id) order, a batch at a time, which the index below serves.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('pending', 'enqueued', 'done', 'cancelled', 'paused'));
ALTER TABLE jobs ADD COLUMN cron_catchup text CHECK (cron_catchup IN ('skip', 'one', 'all')),
                 ADD COLUMN paused_at timestamptz;
COMMENT ON COLUMN jobs.cron_catchup IS 'x-cron-catchup: what missed runs become (skip, one, all); NULL: one';
COMMENT ON COLUMN jobs.paused_at IS 'when the recurring job was paused (state paused); NULL otherwise';

ALTER TABLE job_counts DROP CONSTRAINT job_counts_state_check;
ALTER TABLE job_counts ADD CONSTRAINT job_counts_state_check
    CHECK (state IN ('pending', 'enqueued', 'done', 'cancelled', 'paused'));
INSERT INTO job_counts (state, jobs) VALUES ('paused', 0);

-- The search of the console and the cancel by prefix: a prefix's jobs in (routing_key, id)
-- order, so a batch starts where the last one ended even among jobs sharing one routing key.
CREATE INDEX IF NOT EXISTS jobs_routing_key_id ON jobs (routing_key COLLATE "C", id);
DROP INDEX IF EXISTS jobs_routing_key;

-- Paused jobs are counted; the columns before are unchanged.
CREATE OR REPLACE VIEW stats_counts AS
SELECT
    c.pending,
    c.enqueued,
    c.done,
    c.cancelled,
    CASE WHEN d.next_due_at < now()
         THEN floor(extract(epoch FROM now() - d.next_due_at) * 1000)::bigint
         ELSE 0 END AS oldest_pending_lag_ms,
    d.next_due_at,
    c.paused
FROM (
    SELECT COALESCE(sum(jobs) FILTER (WHERE state = 'pending'), 0)::bigint   AS pending,
           COALESCE(sum(jobs) FILTER (WHERE state = 'enqueued'), 0)::bigint  AS enqueued,
           COALESCE(sum(jobs) FILTER (WHERE state = 'done'), 0)::bigint      AS done,
           COALESCE(sum(jobs) FILTER (WHERE state = 'cancelled'), 0)::bigint AS cancelled,
           COALESCE(sum(jobs) FILTER (WHERE state = 'paused'), 0)::bigint    AS paused
    FROM (SELECT state, jobs FROM job_counts
          UNION ALL
          SELECT state, delta FROM job_count_deltas) AS counted
) AS c, (
    SELECT LEAST(
        (SELECT min(due_at) FROM jobs WHERE state = 'pending' AND lease_owner IS NULL),
        (SELECT min(due_at) FROM jobs WHERE state = 'pending' AND lease_owner IS NOT NULL)
    ) AS next_due_at
) AS d;

CREATE OR REPLACE VIEW stats AS
SELECT c.pending, c.enqueued, c.done, c.cancelled, c.oldest_pending_lag_ms, c.next_due_at,
       l.lateness_p50_ms, l.lateness_p99_ms, l.lateness_max_ms, c.paused
FROM stats_counts AS c, stats_lateness AS l;

-- The console's list of paused schedules: only paused rows, so it stays small.
CREATE INDEX IF NOT EXISTS jobs_paused_at ON jobs (paused_at) WHERE state = 'paused';
