-- Releases the audit observed while another transaction held the row of their run, or of a run
-- of their release group (an operator's UPDATE left open, reference §6). The audit keeps each
-- here and acks its copy, so that any number of locked rows never fills its prefetch window
-- and stops it; it records them once the lock is gone, and the loader does not take their
-- runs for lost ones meanwhile (--resend-after). Few rows: only while such a lock lasts.
CREATE TABLE parked_releases (
    job_id      text        NOT NULL,
    run         integer     NOT NULL,
    due_at      timestamptz NOT NULL,
    released_at timestamptz NOT NULL,
    parked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, run)
);
COMMENT ON TABLE parked_releases IS
    'releases observed while another transaction held their rows; recorded once it ends (docs/reference.md §6)';
