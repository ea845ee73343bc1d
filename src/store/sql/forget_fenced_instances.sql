-- Deletes the registrations of fenced instances, passing by rows another transaction holds
-- (the next beat tries again), then the fences whose registration is gone: a fenced
-- instance's beat finds no row either way.
WITH gone AS (
  DELETE FROM instances WHERE id IN (
    SELECT i.id FROM instances i JOIN instance_fences f ON f.id = i.id
    FOR UPDATE OF i SKIP LOCKED)
  RETURNING id)
DELETE FROM instance_fences f
WHERE f.id IN (SELECT id FROM gone)
   OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = f.id)
