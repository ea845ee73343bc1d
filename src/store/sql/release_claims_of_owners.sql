-- Rows another transaction holds keep their lease: claim_due takes it over once it ends
-- (lease_until), since its owner is fenced or gone. Waiting here would hold up a clean stop,
-- or every heartbeat, for as long as an operator's transaction stays open.
UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE id IN (SELECT id FROM jobs WHERE lease_owner IS NOT NULL
AND lease_owner IN (SELECT jsonb_array_elements_text($1::jsonb))
FOR UPDATE SKIP LOCKED)
