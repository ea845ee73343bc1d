-- The jobs table and its indexes, in bytes (`hourglass prune`).
SELECT pg_total_relation_size('jobs')
