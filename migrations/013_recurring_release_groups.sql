-- Release groups for recurring runs: a recurring run handed over in a group (a popular cron
-- minute) names the group's last run like a one-shot run does, but its row moves on to the next
-- run at once (state `pending`), so the index of migration 010 does not hold it. This one finds
-- the recurring runs that name an observed run (at most one row per recurring job).
CREATE INDEX jobs_recurring_observed_with ON jobs (observed_with_id)
    WHERE cron IS NOT NULL AND observed_with_id IS NOT NULL;
