-- Gives back claims of $1 ($2: ids) it does not hold, only if still older than $3 - $4 ms
-- (claims_older_than): a run claimed again in between is never given back.
UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE lease_owner IS NOT DISTINCT FROM $1
AND id IN (SELECT jsonb_array_elements_text($2::jsonb))
AND lease_until < now() + ($3::bigint - $4::bigint) * interval '1 millisecond'
