-- The instances that have beaten within the last $1 ms.
SELECT count(*) FROM instances
WHERE heartbeat_at >= now() - $1 * interval '1 millisecond'
