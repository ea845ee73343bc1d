-- The earliest $4 claimable jobs (jobs_claimable_due_at, an index-only scan) and the
-- earliest $4 runs handed over (jobs_enqueued_due_at) due before the end, binned by
-- timestamp arithmetic (date_bin: twice as fast as epoch numerics per row); only the bins
-- become slot numbers, overdue ones slot 0. Runs claimed this instant (in flight for
-- milliseconds) are left out.
SELECT GREATEST(0, (floor(extract(epoch FROM bin) * 1000)::bigint - $1::bigint) / $2::bigint)
         AS slot,
sum(pending)::bigint, sum(enqueued)::bigint FROM (
 SELECT date_bin($2::bigint * interval '1 millisecond', due_at,
                 to_timestamp($1::bigint / 1000.0)) AS bin,
 count(*) FILTER (WHERE source = 'p') AS pending,
 count(*) FILTER (WHERE source = 'e') AS enqueued FROM (
  (SELECT due_at, 'p' AS source FROM jobs WHERE state = 'pending'
   AND lease_owner IS NULL AND due_at < to_timestamp($3::bigint / 1000.0)
   ORDER BY due_at LIMIT $4)
  UNION ALL
  (SELECT due_at, 'e' FROM jobs WHERE state = 'enqueued'
   AND due_at >= to_timestamp($1::bigint / 1000.0)
   AND due_at < to_timestamp($3::bigint / 1000.0)
   ORDER BY due_at LIMIT $4)) AS due GROUP BY 1) AS bins GROUP BY 1 ORDER BY 1
