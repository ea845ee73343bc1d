-- The instances that have beaten within the last $1 ms and are not fenced.
SELECT count(*) FROM instances i
WHERE heartbeat_at >= now() - $1 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM instance_fences f WHERE f.id = i.id)
