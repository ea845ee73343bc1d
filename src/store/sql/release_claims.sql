-- Gives back claims of $1 ($2: a JSON array of ids) it did not publish.
UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE lease_owner IS NOT DISTINCT FROM $1
AND id IN (SELECT jsonb_array_elements_text($2::jsonb))
