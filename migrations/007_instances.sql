-- Live leases (reference §6): every running instance registers here and beats about once a second.
-- A claim belongs to its owner while the owner beats: it never expires under a live instance,
-- however long the publish takes. An instance that has not beaten for 3 s is dead: the first
-- live instance to notice deletes its row and gives its claims back, so another instance takes
-- them over within seconds (instead of waiting out --lease). A claim whose owner never
-- registered (an instance from before this migration) still ends with lease_until.
CREATE TABLE instances (
    id           text        PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE instances IS 'running hourglass instances and their last heartbeat (live leases)';
