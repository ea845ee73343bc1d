-- One batch of a cancel by prefix: the next $4 jobs after ($2, $3) in (routing_key, id)
-- order among those whose key starts with $1 (below $5, if any, the first string after
-- every extension of $1), read from jobs_routing_key_id; of them, those a cancel command
-- would cancel (reference §3.2), of the owner $6 if any (reference §3.5), and no other
-- transaction holds are cancelled. Returns the
-- count cancelled, the rows read and the last row's key and id, where the next batch starts.
WITH scanned AS (SELECT id, routing_key FROM jobs
  WHERE (routing_key COLLATE "C", id) > ($2::text COLLATE "C", $3::text)
  AND routing_key COLLATE "C" >= $1::text
  AND ($5::text IS NULL OR routing_key COLLATE "C" < $5::text)
  ORDER BY routing_key COLLATE "C", id LIMIT $4),
cancellable AS (SELECT j.id FROM jobs j JOIN scanned s ON s.id = j.id
  WHERE ($6::text IS NULL OR j.owner = $6::text) AND (j.state = 'paused' OR
        (j.state = 'pending' AND (j.lease_owner IS NULL OR j.cron IS NOT NULL)))
  FOR UPDATE OF j SKIP LOCKED),
cancelled AS (UPDATE jobs j SET state = 'cancelled', paused_at = NULL,
  updated_at = now() FROM cancellable c WHERE j.id = c.id RETURNING 1)
SELECT (SELECT count(*) FROM cancelled), (SELECT count(*) FROM scanned),
  last.routing_key, last.id FROM (SELECT 1) AS one LEFT JOIN LATERAL
  (SELECT routing_key, id FROM scanned
   ORDER BY routing_key COLLATE "C" DESC, id DESC LIMIT 1) AS last ON true
