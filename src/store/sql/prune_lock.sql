-- Leadership of retention for this transaction (migration 019), as sql_intake_lock.
SELECT count(*) = 1 FROM (SELECT 1 FROM leader_locks WHERE name = 'prune'
                          FOR UPDATE SKIP LOCKED) held
