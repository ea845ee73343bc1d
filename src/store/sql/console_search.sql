-- Jobs whose routing key starts with a prefix, as console_job shows them: one range scan of
-- jobs_routing_key_id over [$1, $2), $2 the first string after every extension of $1
-- (NULL: none), at most $3.
SELECT id, routing_key, COALESCE(exchange, ''), state, runs, cron, cron_tz, cron_limit,
       released_run, lateness_ms, lease_owner,
       floor(extract(epoch FROM due_at) * 1000)::bigint,
       floor(extract(epoch FROM cron_until) * 1000)::bigint,
       floor(extract(epoch FROM accepted_at) * 1000)::bigint,
       floor(extract(epoch FROM created_at) * 1000)::bigint,
       floor(extract(epoch FROM updated_at) * 1000)::bigint,
       floor(extract(epoch FROM enqueued_at) * 1000)::bigint,
       floor(extract(epoch FROM released_at) * 1000)::bigint,
       floor(extract(epoch FROM lease_until) * 1000)::bigint,
       body, properties::text, owner
FROM jobs
WHERE routing_key COLLATE "C" >= $1 AND ($2::text IS NULL OR routing_key COLLATE "C" < $2)
ORDER BY routing_key COLLATE "C", id LIMIT $3
