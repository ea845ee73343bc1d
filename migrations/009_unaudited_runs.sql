-- Runs handed over by an instance started with --no-audit: nothing observes their release, so
-- they end `enqueued`. An instance with the audit that runs later on the same database must
-- not take them for runs the broker lost and publish them all again (--resend-after).
ALTER TABLE jobs ADD COLUMN audited boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN jobs.audited IS
    'false: the run last handed over went out with the audit off (--no-audit), so it is never re-sent';
