-- Live recurring jobs, next due first, at most $1 (console_paused_cron lists the paused).
SELECT id, routing_key, cron, COALESCE(cron_tz, 'UTC'),
       floor(extract(epoch FROM due_at) * 1000)::bigint, runs,
       floor(extract(epoch FROM cron_until) * 1000)::bigint, cron_limit, false
FROM jobs WHERE cron IS NOT NULL AND state = 'pending'
ORDER BY due_at LIMIT $1
