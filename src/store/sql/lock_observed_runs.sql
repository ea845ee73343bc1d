-- The loader (hand-over) and the audit (release) each lock the runs whose release the audit
-- observes before anything else (the loader: its runs observed alone and the runs the
-- others are observed with): whichever commits second sees the other's work, so a group's
-- runs end `done` whatever the order. They lock in id order, so the two cannot deadlock;
-- past a brief wait (record_around_locks) each takes the rows it can and leaves the rest.
SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
ORDER BY id FOR UPDATE
