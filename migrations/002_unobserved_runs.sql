-- Runs handed over to the delay queues and not yet observed: the loader re-sends those the
-- broker lost (still `enqueued` long after their due time). Few rows: only those in flight.
CREATE INDEX jobs_enqueued_due_at ON jobs (due_at)
    WHERE state = 'enqueued';
