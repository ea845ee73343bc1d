-- Orphaned claims: lease_until is the claim's time + the lease it was given.
SELECT id FROM jobs WHERE lease_owner IS NOT DISTINCT FROM $1
AND lease_until < now() + ($2::bigint - $3::bigint) * interval '1 millisecond'
