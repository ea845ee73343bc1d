-- The ids of the SQL intake's $1 oldest waiting commands.
SELECT id FROM commands ORDER BY id LIMIT $1
