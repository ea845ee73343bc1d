-- Deletes the registrations of fenced instances, passing by rows another transaction holds
-- (the next beat tries again). The fence itself stays until the instance registers again
-- (register_instance), so that a claim it sent before it learnt of the fence takes nothing
-- (claim_due); the fences of instances gone for an hour (a process id never comes back) go.
WITH gone AS (
  DELETE FROM instances WHERE id IN (
    SELECT i.id FROM instances i JOIN instance_fences f ON f.id = i.id
    FOR UPDATE OF i SKIP LOCKED)
  RETURNING id)
DELETE FROM instance_fences f
WHERE f.fenced_at < clock_timestamp() - interval '1 hour'
  AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = f.id)
  AND f.id NOT IN (SELECT id FROM gone)
