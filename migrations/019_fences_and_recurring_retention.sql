-- Fencing that no lock held elsewhere can stop (docs/architecture.md "Fencing"). An instance
-- silent for the takeover interval is fenced by a row here, written by a live instance in the
-- same transaction that gives its claims back. Deleting its registration needs that row's
-- lock, which an operator's `SELECT ... FOR UPDATE`, or the session of a heartbeat cut from
-- its client, can hold for minutes; a fence needs no lock on the fenced instance's row. A
-- fenced instance's beats find the fence and count as lost, so it drops what it holds before
-- it registers again (which removes the fence).
CREATE TABLE IF NOT EXISTS instance_fences (
    id        text        PRIMARY KEY,
    fenced_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    fenced_by text        NOT NULL
);
COMMENT ON TABLE instance_fences IS
    'instances taken for dead: their claims were given back, their next heartbeat fails';

-- Retention of ended recurring jobs (reference §8): a cancelled cron job, or one past its last
-- run, is deleted like an ended one-shot job. Recurring jobs are few: this index is small.
CREATE INDEX IF NOT EXISTS jobs_ended_recurring_at ON jobs (updated_at)
    WHERE state IN ('done', 'cancelled') AND cron IS NOT NULL;

-- Leadership (the SQL intake, retention) by a row lock on this table, which only hourglass's
-- role may take (SELECT ... FOR UPDATE needs UPDATE on it): an advisory lock has no owner, and
-- any role that could connect could hold one and silently stop the intake or the pruning.
CREATE TABLE IF NOT EXISTS leader_locks (
    name text PRIMARY KEY
);
COMMENT ON TABLE leader_locks IS
    'one row per task that one instance at a time runs; its leader holds the row locked';
INSERT INTO leader_locks (name) VALUES ('sql_intake'), ('prune') ON CONFLICT DO NOTHING;
