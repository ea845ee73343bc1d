-- Gives back claims of $1 ($2: ids) it does not hold, only if still older than $3 - $4 ms
-- (claims_older_than): a run claimed again in between is never given back. Rows another
-- transaction holds are passed by (the next reconciliation looks again): the heartbeat that
-- runs this must never wait for an operator's transaction, or this instance would stop
-- beating and be taken for dead.
UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE id IN (
  SELECT id FROM jobs
  WHERE lease_owner IS NOT DISTINCT FROM $1
    AND id IN (SELECT jsonb_array_elements_text($2::jsonb))
    AND lease_until < now() + ($3::bigint - $4::bigint) * interval '1 millisecond'
  FOR UPDATE SKIP LOCKED)
AND lease_owner IS NOT DISTINCT FROM $1
AND lease_until < now() + ($3::bigint - $4::bigint) * interval '1 millisecond'
