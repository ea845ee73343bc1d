-- The stats view (reference §8): the counts of stats_counts, then the lateness of
-- the last hour's releases (stats_lateness).
SELECT pending, enqueued, done, cancelled, oldest_pending_lag_ms,
       floor(extract(epoch FROM next_due_at) * 1000)::bigint, paused,
       (SELECT count(*) FROM (SELECT 1 FROM commands LIMIT $1) AS waiting),
       lateness_p50_ms, lateness_p99_ms, lateness_max_ms
FROM stats
