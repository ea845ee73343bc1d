-- Locks one job's row for a command and reads what the command's outcome depends on (its
-- owner too: reference §3.5).
SELECT state, lease_owner IS NOT NULL, cron IS NOT NULL,
floor(extract(epoch FROM due_at) * 1000)::bigint, owner FROM jobs WHERE id = $1
FOR UPDATE
