-- The ownership rule (docs/architecture.md "Fencing"), its one taking step: $1, which beat
-- recently itself (JobStore::heartbeat checks), fences the instances silent for $2 ms and
-- returns them; the caller gives their claims back in the same transaction. Reads the
-- registrations without locking them: a row another transaction holds is fenced all the same.
INSERT INTO instance_fences (id, fenced_by)
SELECT id, $1 FROM instances
WHERE heartbeat_at < clock_timestamp() - $2 * interval '1 millisecond' AND id <> $1
ON CONFLICT (id) DO NOTHING
RETURNING id
