-- The SQL intake's commands ($1: a JSON array of ids) once their receipts are written.
DELETE FROM commands WHERE id IN
(SELECT (jsonb_array_elements_text($1::jsonb))::bigint)
