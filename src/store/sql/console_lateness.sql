-- The lateness of the latest $1 releases, for the console's histogram.
SELECT lateness_ms FROM jobs WHERE released_at IS NOT NULL
AND lateness_ms IS NOT NULL ORDER BY released_at DESC LIMIT $1
