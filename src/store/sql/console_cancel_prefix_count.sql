-- What a cancel by prefix would cancel (store's cancel_prefix_batch), counted up to $3.
SELECT count(*) FROM (SELECT 1 FROM jobs WHERE routing_key COLLATE "C" >= $1
AND ($2::text IS NULL OR routing_key COLLATE "C" < $2)
AND (state = 'paused' OR (state = 'pending' AND
     (lease_owner IS NULL OR cron IS NOT NULL))) LIMIT $3) AS cancellable
