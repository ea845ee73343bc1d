-- The table's comment pointed at a design document that ships with neither the source nor the
-- package; it now names the one that does (001_jobs.sql says the same for new databases).
-- COMMENT takes a lock that neither writers nor claims conflict with.
COMMENT ON TABLE jobs IS 'hourglass jobs, one row per job id (docs/reference.md §8)';
