-- A beat of $1 (fencing, see register_instance): only an update, and none while the instance
-- is fenced, so a beat that updates no row was taken for dead. Returns the previous beat's age
-- in ms (a taker must have beaten recently itself).
UPDATE instances i SET heartbeat_at = clock_timestamp()
FROM (SELECT heartbeat_at AS previous FROM instances WHERE id = $1 FOR UPDATE) p
WHERE i.id = $1 AND NOT EXISTS (SELECT 1 FROM instance_fences f WHERE f.id = $1)
RETURNING extract(epoch FROM clock_timestamp() - p.previous) * 1000
