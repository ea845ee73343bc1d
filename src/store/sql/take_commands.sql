-- $1 commands at most, the oldest first (or only the command $4); a body over $2 bytes or
-- properties or headers over $3 are not read, only measured. The batch stops before the first
-- command whose earlier ones read $6 bytes or more (the first is always taken), so a batch of
-- large bodies holds a bounded amount in memory; the rest wait for the next take. The last
-- column but one counts the candidates, so the caller knows whether more wait; the last is the
-- inserting role, the command's owner (migration 020), at most $5 characters.
WITH candidates AS (
  SELECT id, routing_key, body, properties, headers, owner,
         octet_length(body) AS body_bytes, octet_length(properties::text) AS properties_bytes,
         octet_length(headers::text) AS headers_bytes
  FROM commands WHERE ($4::bigint IS NULL OR id = $4::bigint)
  ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED),
read AS (
  SELECT c.*, sum(CASE WHEN body_bytes <= $2 THEN body_bytes ELSE 0 END
                  + CASE WHEN properties_bytes <= $3 THEN properties_bytes ELSE 0 END
                  + CASE WHEN headers_bytes <= $3 THEN headers_bytes ELSE 0 END)
              OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS read_through
  FROM candidates c),
taken AS (
  SELECT r.*, lag(read_through, 1, 0::numeric) OVER (ORDER BY id) AS read_before FROM read r)
SELECT id, left(routing_key, $5),
CASE WHEN body_bytes <= $2 THEN body END, body_bytes,
CASE WHEN properties_bytes <= $3 THEN properties::text END, properties_bytes,
CASE WHEN headers_bytes <= $3 THEN headers::text END, headers_bytes,
(SELECT count(*) FROM candidates), left(owner, $5)
FROM taken WHERE read_before < $6
ORDER BY id
