-- The SQL intake's receipts (migration 018), the oldest first, by command_receipts_decided_at.
DELETE FROM command_receipts WHERE command_id IN (SELECT command_id FROM
command_receipts WHERE decided_at < now() - $1 * interval '1 millisecond'
ORDER BY decided_at LIMIT $2)
