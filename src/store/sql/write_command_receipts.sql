-- The SQL intake's receipts ($1: a JSON array), one per command (migration 018).
INSERT INTO command_receipts (command_id, job_id, status, due_at, error, count)
SELECT x.command_id, x.job_id, x.status, x.due_at, x.error, x.count
FROM jsonb_to_recordset($1::jsonb) AS x(command_id bigint, job_id text,
status text, due_at timestamptz, error text, count bigint)
ON CONFLICT (command_id) DO NOTHING
