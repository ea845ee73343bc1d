-- The latest $1 rejections, newest first.
SELECT floor(extract(epoch FROM rejected_at) * 1000)::bigint
, job_id, routing_key, reason FROM rejections ORDER BY id DESC LIMIT $1
