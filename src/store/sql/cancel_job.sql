-- A cancel command's change to a job it may cancel (reference §3.2; store: cancel_one).
UPDATE jobs SET state = 'cancelled', paused_at = NULL, updated_at = now()
WHERE id = $1
