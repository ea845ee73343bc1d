-- Runs the loader cannot publish ($2: a JSON array of {id, and as escaped for the console
-- job_id, routing_key, reason}): a value AMQP
-- cannot carry, in a row written by hand or by a version before the SQL intake checked it.
-- Each still leased to $1 ends `cancelled`, and its reason goes to `rejections` for the
-- console, so it is never claimed again nor holds up another run.
WITH x AS (SELECT * FROM jsonb_to_recordset($2::jsonb)
           AS x(id text, job_id text, routing_key text, reason text)),
cancelled AS (
  UPDATE jobs j SET state = 'cancelled', lease_owner = NULL, lease_until = NULL,
                    updated_at = now()
  FROM x WHERE j.id = x.id AND j.lease_owner IS NOT DISTINCT FROM $1
  RETURNING j.id)
INSERT INTO rejections (job_id, routing_key, reason)
SELECT x.job_id, x.routing_key, x.reason FROM x WHERE x.id IN (SELECT id FROM cancelled)
