-- Release groups: runs published together into one delay queue with one due time leave it in
-- publish order, so the audit observes only the group's last run and records the others with
-- it. Each of the others names that run here; the index finds them when its release arrives
-- (few rows: only runs in flight are `enqueued`).
ALTER TABLE jobs ADD COLUMN observed_with_id text, ADD COLUMN observed_with_run integer;
COMMENT ON COLUMN jobs.observed_with_id IS
    'set: the release of this run is observed through the release of that job''s run observed_with_run (the last of its release group)';
CREATE INDEX jobs_enqueued_observed_with ON jobs (observed_with_id) WHERE state = 'enqueued';
