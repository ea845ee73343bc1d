-- Paused schedules (jobs_paused_at), latest paused first, at most $1; columns as console_cron.
SELECT id, routing_key, cron, COALESCE(cron_tz, 'UTC'),
       floor(extract(epoch FROM due_at) * 1000)::bigint, runs,
       floor(extract(epoch FROM cron_until) * 1000)::bigint, cron_limit, true
FROM jobs WHERE state = 'paused'
ORDER BY paused_at DESC LIMIT $1
