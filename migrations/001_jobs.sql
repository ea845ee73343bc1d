-- hourglass.jobs: one row per job (reference §8). Applied with search_path set to the
-- hourglass schema (`--schema`), so names are unqualified.

CREATE TABLE jobs (
    id            text        PRIMARY KEY,
    routing_key   text        NOT NULL,
    -- Target exchange (x-hourglass-exchange); NULL releases to the output exchange.
    exchange      text,
    state         text        NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'enqueued', 'done', 'cancelled')),
    -- Next due time: the one-shot due time, or the next run of a recurring job.
    due_at        timestamptz NOT NULL,
    cron          text,
    cron_tz       text,
    cron_until    timestamptz,
    cron_limit    integer     CHECK (cron_limit IS NULL OR cron_limit >= 1),
    -- Runs handed over to the delay topology so far.
    runs          integer     NOT NULL DEFAULT 0,
    body          bytea       NOT NULL,
    properties    jsonb       NOT NULL,
    -- When hourglass accepted the command that created (or last replaced) the job.
    accepted_at   timestamptz NOT NULL DEFAULT now(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    enqueued_at   timestamptz,
    -- Last observed release, its run number, and its lateness (reference §8).
    released_at   timestamptz,
    released_run  integer,
    lateness_ms   double precision,
    -- A loader instance claimed the next run: it belongs to the delay topology from here on.
    -- The lease lets another instance take over when the owner dies.
    lease_owner   text,
    lease_until   timestamptz
);

COMMENT ON TABLE jobs IS 'hourglass jobs, one row per job id (docs/reference.md §8)';

-- The loader's claim: the earliest unclaimed pending jobs. Partial, so its size follows the
-- pending jobs that are not yet claimed, and the claim reads only the rows it takes.
CREATE INDEX jobs_claimable_due_at ON jobs (due_at)
    WHERE state = 'pending' AND lease_owner IS NULL;

-- Claims whose owner may have died: few rows (only those in flight).
CREATE INDEX jobs_leased_until ON jobs (lease_until)
    WHERE lease_owner IS NOT NULL;

-- Lateness percentiles over the last hour (hourglass.stats).
CREATE INDEX jobs_released_at ON jobs (released_at)
    WHERE released_at IS NOT NULL;

-- One row of counts and figures for operators and `hourglass status`.
CREATE VIEW stats AS
SELECT
    (SELECT count(*) FROM jobs WHERE state = 'pending')   AS pending,
    (SELECT count(*) FROM jobs WHERE state = 'enqueued')  AS enqueued,
    (SELECT count(*) FROM jobs WHERE state = 'done')      AS done,
    (SELECT count(*) FROM jobs WHERE state = 'cancelled') AS cancelled,
    COALESCE((SELECT floor(extract(epoch FROM now() - min(due_at)) * 1000)::bigint
              FROM jobs
              WHERE state = 'pending' AND due_at < now()), 0) AS oldest_pending_lag_ms,
    (SELECT min(due_at) FROM jobs WHERE state = 'pending') AS next_due_at,
    l.lateness_p50_ms,
    l.lateness_p99_ms,
    l.lateness_max_ms
FROM (
    SELECT percentile_cont(0.5)  WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p50_ms,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p99_ms,
           max(lateness_ms) AS lateness_max_ms
    FROM jobs
    WHERE released_at > now() - interval '1 hour'
) AS l;
