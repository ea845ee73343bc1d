-- $1 commands at most, the oldest first (or only the command $4); a body over $2 bytes or
-- properties or headers over $3 are not read, only measured.
SELECT id, left(routing_key, $5),
CASE WHEN octet_length(body) <= $2 THEN body END, octet_length(body),
CASE WHEN octet_length(properties::text) <= $3 THEN properties::text END,
octet_length(properties::text),
CASE WHEN octet_length(headers::text) <= $3 THEN headers::text END,
octet_length(headers::text)
FROM commands WHERE ($4::bigint IS NULL OR id = $4::bigint)
ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
