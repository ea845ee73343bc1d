-- Deletes the registrations of instances (not $1) silent for $2 ms: they are taken for dead.
DELETE FROM instances
WHERE heartbeat_at < clock_timestamp() - $2 * interval '1 millisecond'
AND id <> $1 RETURNING id
