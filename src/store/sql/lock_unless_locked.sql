-- Locks the rows of $1 (a JSON array of ids) that no other transaction holds, in id order.
SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
ORDER BY id FOR UPDATE SKIP LOCKED
