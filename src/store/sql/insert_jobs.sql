-- New jobs ($1: a JSON array of rows); an id already stored is left as it is (ON CONFLICT).
-- Rows marked `leased` are claimed at insert by the loader $2 for $3 ms (NULL $2: none).
INSERT INTO jobs (id, routing_key, exchange, due_at, accepted_at, body, properties,
                  cron, cron_tz, cron_until, cron_limit, expires_after_ms, cron_catchup,
                  lease_owner, lease_until, owner)
SELECT x.id, x.routing_key, x.exchange, x.due_at, x.accepted_at, decode(x.body, 'base64'),
       x.properties, x.cron, x.cron_tz, x.cron_until, x.cron_limit, x.expires_after_ms,
       x.cron_catchup,
       CASE WHEN x.leased THEN $2::text END,
       CASE WHEN x.leased AND $2::text IS NOT NULL
            THEN now() + $3 * interval '1 millisecond' END,
       x.owner
FROM jsonb_to_recordset($1::jsonb) AS x(id text, routing_key text, exchange text,
     due_at timestamptz, accepted_at timestamptz, body text, properties jsonb, cron text,
     cron_tz text, cron_until timestamptz, cron_limit integer, leased boolean,
     expires_after_ms bigint, cron_catchup text, owner text)
ON CONFLICT (id) DO NOTHING
RETURNING id, lease_owner IS NOT NULL
