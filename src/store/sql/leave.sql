-- A clean stop: the instance's registration goes (its claims were given back first), and
-- any fence on it.
WITH unfenced AS (DELETE FROM instance_fences WHERE id = $1)
DELETE FROM instances WHERE id = $1
