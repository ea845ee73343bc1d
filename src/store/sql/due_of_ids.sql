-- The due times and owners of the jobs $1 (a JSON array of ids) that exist.
SELECT id, floor(extract(epoch FROM due_at) * 1000)::bigint, owner FROM jobs
WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
