-- A pause command's change to a recurring job (reference §3.2; store: pause_one).
UPDATE jobs SET state = 'paused', paused_at = now(), updated_at = now()
WHERE id = $1
