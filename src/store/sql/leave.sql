-- A clean stop: the instance's registration goes (its claims were given back first).
DELETE FROM instances WHERE id = $1
