-- The SQL intake's receipts ($1: a JSON array), one per command (migration 018). A receipt
-- already under a command's id can only be that of an earlier command given the same id (by
-- a role allowed to choose ids: OVERRIDING SYSTEM VALUE): this command's replaces it, and the
-- ids whose receipt was replaced are returned, for the intake to report.
INSERT INTO command_receipts AS r (command_id, job_id, status, due_at, error, count, owner)
SELECT x.command_id, x.job_id, x.status, x.due_at, x.error, x.count, x.owner
FROM jsonb_to_recordset($1::jsonb) AS x(command_id bigint, job_id text,
status text, due_at timestamptz, error text, count bigint, owner text)
ON CONFLICT (command_id) DO UPDATE SET job_id = excluded.job_id, status = excluded.status,
  due_at = excluded.due_at, error = excluded.error, count = excluded.count,
  owner = excluded.owner, decided_at = now()
RETURNING command_id, xmax::text <> '0'
