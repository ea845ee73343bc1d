-- The earliest due time of a run nobody has claimed (the loader's next wake-up).
SELECT floor(extract(epoch FROM min(due_at)) * 1000)::bigint FROM jobs
WHERE state = 'pending' AND lease_owner IS NULL
