-- The counts per state, the oldest pending lag and the next due time; then the SQL intake's
-- backlog, counted up to $1 rows (its primary key: a read of the index).
SELECT pending, enqueued, done, cancelled, oldest_pending_lag_ms,
       floor(extract(epoch FROM next_due_at) * 1000)::bigint, paused,
       (SELECT count(*) FROM (SELECT 1 FROM commands LIMIT $1) AS waiting)
FROM stats_counts
