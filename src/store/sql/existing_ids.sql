-- Of rows a lock skipped, those that exist: another transaction holds them (or they are
-- gone, and nothing waits for them).
SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
