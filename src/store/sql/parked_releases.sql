-- The oldest $1 parked releases that no other audit is recording.
SELECT job_id, run, floor(extract(epoch FROM due_at) * 1000)::bigint,
floor(extract(epoch FROM released_at) * 1000000)::bigint FROM parked_releases
ORDER BY parked_at, job_id, run LIMIT $1 FOR UPDATE SKIP LOCKED
