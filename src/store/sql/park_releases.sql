-- Releases parked while another transaction held their rows (migration 012). The
-- records of the parked take them oldest first and skip those another audit is recording.
INSERT INTO parked_releases (job_id, run, due_at, released_at)
SELECT x.id, x.run, to_timestamp(x.due_ms / 1000.0),
to_timestamp(x.released_us / 1000000.0)
FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer, due_ms bigint,
released_us bigint) ON CONFLICT (job_id, run) DO NOTHING
