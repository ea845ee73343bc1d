-- Leadership of the SQL intake for this transaction (migration 019): true when this session
-- holds the row, false when another instance does. Only hourglass's role can lock it.
SELECT count(*) = 1 FROM (SELECT 1 FROM leader_locks WHERE name = 'sql_intake'
                          FOR UPDATE SKIP LOCKED) held
