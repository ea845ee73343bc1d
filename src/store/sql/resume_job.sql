-- A resume command's change to a paused job (reference §3.2; store: pause_one).
UPDATE jobs SET state = 'pending', paused_at = NULL, updated_at = now()
WHERE id = $1
