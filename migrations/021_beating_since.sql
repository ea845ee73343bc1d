-- Fencing after a stall (docs/architecture.md "Fencing"): an instance fences another only once
-- it has itself beaten without a break for the publish grace (2 s). After PostgreSQL stalled,
-- every instance's last beat is old; the first beats to run after it must not fence instances
-- whose own beats are still on their way, nor one whose record of a publish waits behind them.
-- beating_since is the start of an instance's current run of beats, each within the publish
-- grace of the one before; a gap restarts it.
ALTER TABLE instances ADD COLUMN IF NOT EXISTS beating_since timestamptz NOT NULL DEFAULT clock_timestamp();
COMMENT ON COLUMN instances.beating_since IS
    'start of this instance''s unbroken run of heartbeats: it may fence others once it is 2 s old';
