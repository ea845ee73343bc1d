-- A job scheduled again under its id ($1: a JSON array of rows, as insert_jobs): everything
-- but the id is the new command's, and it is pending and unclaimed again. A run still leased
-- (a cancelled or paused recurring job's run in flight) keeps its number: the next run gets
-- the one after it, so that a consumer deduplicating on x-hourglass-id and x-hourglass-run
-- never drops a run of the new job as a copy of the old one.
UPDATE jobs j
SET routing_key = x.routing_key, exchange = x.exchange, due_at = x.due_at,
    accepted_at = x.accepted_at, body = decode(x.body, 'base64'), properties = x.properties,
    cron = x.cron, cron_tz = x.cron_tz, cron_until = x.cron_until, cron_limit = x.cron_limit,
    expires_after_ms = x.expires_after_ms, cron_catchup = x.cron_catchup, owner = x.owner,
    paused_at = NULL,
    expired_at = NULL, state = 'pending', lease_owner = NULL, lease_until = NULL,
    runs = j.runs + CASE WHEN j.lease_owner IS NOT NULL THEN 1 ELSE 0 END,
    updated_at = now()
FROM jsonb_to_recordset($1::jsonb) AS x(id text, routing_key text, exchange text,
     due_at timestamptz, accepted_at timestamptz, body text, properties jsonb, cron text,
     cron_tz text, cron_until timestamptz, cron_limit integer, leased boolean,
     expires_after_ms bigint, cron_catchup text, owner text)
WHERE j.id = x.id
