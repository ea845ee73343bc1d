-- The oldest rejections first (by id, the primary key): past the retention, or beyond the
-- newest $3. The scan stops at $2 rows and reads at most the table, which $3 bounds.
DELETE FROM rejections WHERE id IN (SELECT id FROM rejections
WHERE rejected_at < now() - $1 * interval '1 millisecond'
OR id <= COALESCE((SELECT id FROM rejections ORDER BY id DESC OFFSET $3 LIMIT 1), 0)
ORDER BY id LIMIT $2)
