-- The console (web page at / and /api/): what its views need that the schema lacked.

-- Recent rejections (reference §4), newest first by id. Every value is stored escaped (printable
-- ASCII, as in the logs) and cut short, since a rejected command may hold any bytes. Bounded:
-- the pruner deletes rows older than --retention and keeps at most the newest 100,000.
CREATE TABLE rejections (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rejected_at timestamptz NOT NULL DEFAULT now(),
    job_id      text        NOT NULL,
    routing_key text        NOT NULL,
    reason      text        NOT NULL
);
COMMENT ON TABLE rejections IS 'recent rejected commands (escaped), bounded by retention';

-- Cron schedules with their next run, earliest first; only recurring jobs still live.
CREATE INDEX IF NOT EXISTS jobs_cron_due_at ON jobs (due_at) WHERE cron IS NOT NULL AND state = 'pending';

-- Search by routing-key prefix: a byte-order range scan (C collation), whatever the database's
-- collation. IF NOT EXISTS: on a large table an operator may build these beforehand with
-- CREATE INDEX CONCURRENTLY (docs/operating.md "Upgrades"), since here writes wait for them.
CREATE INDEX IF NOT EXISTS jobs_routing_key ON jobs (routing_key COLLATE "C");
