-- Fencing (docs/architecture.md "Fencing"): only the owner inserts its row, and only at
-- start or after it dropped what it held, which also lifts a fence on it; a beat only updates
-- it, so a beat that finds no row (or a fence) knows it was taken for dead. Stamped with
-- clock_timestamp(), not now(): a beat held up by a stall is stamped when it runs, not when
-- its transaction began. A registration starts a new run of beats (heartbeat.sql).
WITH unfenced AS (DELETE FROM instance_fences WHERE id = $1)
INSERT INTO instances (id, heartbeat_at, beating_since) VALUES ($1, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp(), beating_since = clock_timestamp()
