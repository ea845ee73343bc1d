-- A beat of $1 (fencing, see register_instance): only an update, and none while the instance
-- is fenced, so a beat that updates no row was taken for dead. A beat within $2 ms of the one
-- before continues the instance's run of beats (beating_since); a later one starts a new run.
-- Returns how long, in ms, the run has lasted: a taker must have beaten without a break for
-- $2 ms itself, so that after a stall of PostgreSQL, when every beat is old, every instance's
-- waiting beat (and record) lands before anyone is fenced.
UPDATE instances i
SET heartbeat_at = clock_timestamp(),
    beating_since = CASE WHEN clock_timestamp() - p.previous < $2 * interval '1 millisecond'
                         THEN p.beating_since ELSE clock_timestamp() END
FROM (SELECT heartbeat_at AS previous, beating_since FROM instances WHERE id = $1 FOR UPDATE) p
WHERE i.id = $1 AND NOT EXISTS (SELECT 1 FROM instance_fences f WHERE f.id = $1)
RETURNING extract(epoch FROM clock_timestamp() - i.beating_since) * 1000
