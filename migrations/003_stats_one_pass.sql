-- hourglass.stats in one pass over jobs instead of one scan per figure: at 10 M jobs the old
-- view read the table six times (7–13 s per read, README "Benchmarks"). Same columns.
CREATE OR REPLACE VIEW stats AS
SELECT
    c.pending,
    c.enqueued,
    c.done,
    c.cancelled,
    COALESCE(floor(extract(epoch FROM now() - c.oldest_overdue_due_at) * 1000)::bigint, 0)
        AS oldest_pending_lag_ms,
    c.next_due_at,
    l.lateness_p50_ms,
    l.lateness_p99_ms,
    l.lateness_max_ms
FROM (
    SELECT count(*) FILTER (WHERE state = 'pending')   AS pending,
           count(*) FILTER (WHERE state = 'enqueued')  AS enqueued,
           count(*) FILTER (WHERE state = 'done')      AS done,
           count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
           min(due_at) FILTER (WHERE state = 'pending' AND due_at < now()) AS oldest_overdue_due_at,
           min(due_at) FILTER (WHERE state = 'pending') AS next_due_at
    FROM jobs
) AS c, (
    SELECT percentile_cont(0.5)  WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p50_ms,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY lateness_ms) AS lateness_p99_ms,
           max(lateness_ms) AS lateness_max_ms
    FROM jobs
    WHERE released_at > now() - interval '1 hour'
) AS l;
