-- The transactions of other sessions holding a row of leader_locks now (migration 019), with
-- their session as far as this role may see it. A row locked FOR UPDATE carries the locker's
-- transaction id in xmax, and that transaction holds a lock on its own id while it is open
-- (pg_locks, which every role may read). The duration is null where pg_stat_activity hides it
-- (another role's session, without pg_read_all_stats).
SELECT l.name, l.xmax::text, k.pid, COALESCE(a.usename, ''), COALESCE(a.application_name, ''),
       COALESCE(a.state, ''), floor(extract(epoch FROM now() - a.xact_start) * 1000)::bigint
FROM leader_locks l
JOIN pg_locks k ON k.locktype = 'transactionid' AND k.transactionid = l.xmax AND k.granted
                   AND k.mode = 'ExclusiveLock'
LEFT JOIN pg_stat_activity a ON a.pid = k.pid
WHERE k.pid <> pg_backend_pid()
ORDER BY l.name
