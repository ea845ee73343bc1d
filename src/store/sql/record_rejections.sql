-- Rejected commands ($1: a JSON array), kept for operators and the console.
INSERT INTO rejections (job_id, routing_key, reason) SELECT x.job_id,
x.routing_key, x.reason FROM jsonb_to_recordset($1::jsonb)
AS x(job_id text, routing_key text, reason text)
