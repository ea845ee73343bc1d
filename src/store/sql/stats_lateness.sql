-- The lateness of the last hour's releases (read apart from the counts, which are cheap).
SELECT lateness_p50_ms, lateness_p99_ms, lateness_max_ms FROM stats_lateness
