-- One job as the console shows it (console_store.cpp, job_of: times as epoch milliseconds,
-- body and properties last).
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
FROM jobs WHERE id = $1
