-- Jobs per state without reading the table. hourglass.stats counted them with a scan of
-- jobs: at 10 M jobs one read took 3.7 s of a core and 2.3 GB of reads, and cost ingest 10 %
-- and steady p99 13× while it ran (README "Benchmarks"). Now every statement that writes
-- jobs appends its net change per state to job_count_deltas (an append: it never waits for
-- another transaction), and fold_job_counts(), which hourglass calls every few seconds, adds
-- them into job_counts. The view sums both, so it is exact at any moment, also for rows that
-- operators insert, update or delete by hand.

CREATE TABLE job_counts (
    state text   PRIMARY KEY CHECK (state IN ('pending', 'enqueued', 'done', 'cancelled')),
    jobs  bigint NOT NULL
);
COMMENT ON TABLE job_counts IS 'jobs per state, up to the deltas not yet folded (hourglass.stats)';

CREATE TABLE job_count_deltas (
    state text   NOT NULL,
    delta bigint NOT NULL
);
COMMENT ON TABLE job_count_deltas IS 'per-statement changes of jobs per state, folded into job_counts by fold_job_counts()';

-- One function for the three triggers: TG_OP says which transition tables exist. It runs as
-- its owner with this schema's search_path, so an operator's `DELETE FROM hourglass.jobs`
-- counts too, whatever their search_path and without rights on the counting tables.
CREATE FUNCTION count_job_states() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_count_deltas (state, delta)
        SELECT state, count(*) FROM new_rows GROUP BY state;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO job_count_deltas (state, delta)
        SELECT state, -count(*) FROM old_rows GROUP BY state;
    ELSE
        -- Claims and lease changes keep the state: they add nothing.
        INSERT INTO job_count_deltas (state, delta)
        SELECT state, sum(change) FROM (
            SELECT state, 1 AS change FROM new_rows
            UNION ALL
            SELECT state, -1 FROM old_rows
        ) AS changes
        GROUP BY state HAVING sum(change) <> 0;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION reset_job_counts() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM job_count_deltas;
    UPDATE job_counts SET jobs = 0;
    RETURN NULL;
END
$$;

-- Folds the deltas committed so far into job_counts. One folder at a time per schema (the
-- others skip: the next fold takes what they left), so folds never deadlock on job_counts.
CREATE FUNCTION fold_job_counts() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('hourglass.fold_job_counts.' || current_schema())) THEN
        RETURN;
    END IF;
    WITH folded AS (
        DELETE FROM job_count_deltas RETURNING state, delta
    ), sums AS (
        SELECT state, sum(delta) AS delta FROM folded GROUP BY state
    )
    UPDATE job_counts c SET jobs = c.jobs + s.delta FROM sums s WHERE c.state = s.state;
END
$$;

-- The triggers lock jobs against writers until this migration commits, so the counts below
-- and the deltas after them never miss or double a row.
CREATE TRIGGER jobs_count_inserts AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_job_states();
CREATE TRIGGER jobs_count_updates AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_job_states();
CREATE TRIGGER jobs_count_deletes AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_job_states();
CREATE TRIGGER jobs_count_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION reset_job_counts();

-- The one scan of jobs this needs (seconds at 10 M jobs), once.
INSERT INTO job_counts (state, jobs)
SELECT s.state, count(j.state)
FROM unnest(ARRAY['pending', 'enqueued', 'done', 'cancelled']) AS s(state)
LEFT JOIN jobs j ON j.state = s.state
GROUP BY s.state;

-- Same columns as before; nothing here reads all of jobs. The earliest pending due time comes
-- from the partial indexes of claimable jobs (jobs_claimable_due_at) and of leased ones
-- (jobs_leased_until: the runs in flight), the lateness figures from jobs_released_at.
CREATE OR REPLACE VIEW stats AS
SELECT
    c.pending,
    c.enqueued,
    c.done,
    c.cancelled,
    CASE WHEN d.next_due_at < now()
         THEN floor(extract(epoch FROM now() - d.next_due_at) * 1000)::bigint
         ELSE 0 END AS oldest_pending_lag_ms,
    d.next_due_at,
    l.lateness_p50_ms,
    l.lateness_p99_ms,
    l.lateness_max_ms
FROM (
    SELECT COALESCE(sum(jobs) FILTER (WHERE state = 'pending'), 0)::bigint   AS pending,
           COALESCE(sum(jobs) FILTER (WHERE state = 'enqueued'), 0)::bigint  AS enqueued,
           COALESCE(sum(jobs) FILTER (WHERE state = 'done'), 0)::bigint      AS done,
           COALESCE(sum(jobs) FILTER (WHERE state = 'cancelled'), 0)::bigint AS cancelled
    FROM (SELECT state, jobs FROM job_counts
          UNION ALL
          SELECT state, delta FROM job_count_deltas) AS counted
) AS c, (
    SELECT LEAST(
        (SELECT min(due_at) FROM jobs WHERE state = 'pending' AND lease_owner IS NULL),
        (SELECT min(due_at) FROM jobs WHERE state = 'pending' AND lease_owner IS NOT NULL)
    ) AS next_due_at
) AS d, (
    SELECT percentile_cont(0.5)  WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p50_ms,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p99_ms,
           max(lateness_ms) AS lateness_max_ms
    FROM jobs
    WHERE released_at > now() - interval '1 hour'
) AS l;
