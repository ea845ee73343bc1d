-- The index of migration 010 found the runs of a release group by the run they are observed
-- with, but it held every enqueued row, and in a steady load nearly every run is observed
-- alone (observed_with_id NULL): each hand-over wrote an index entry that no lookup reads.
-- This one holds only the runs that name another. Every statement that reads it compares
-- observed_with_id with `=`, which PostgreSQL takes as proof of IS NOT NULL, so the statements
-- of older instances use it too (a rolling upgrade). Built before the old one is dropped, so
-- that the table's exclusive lock lasts only from the drop to the commit; the build reads the
-- table once while writes wait (like migration 013).
CREATE INDEX jobs_enqueued_in_group ON jobs (observed_with_id)
    WHERE state = 'enqueued' AND observed_with_id IS NOT NULL;
DROP INDEX jobs_enqueued_observed_with;
