-- The SQL intake (reference §3.4): an application schedules inside its own transaction by
-- inserting a command here; hourglass takes committed commands in id order, turns each into a
-- job or a rejection exactly as it would the same command published to <prefix>.in, writes its
-- receipt to command_receipts and deletes it, all in one transaction. A rolled-back insert
-- never existed. A trigger wakes hourglass at commit (NOTIFY is sent only on commit); hourglass
-- also polls, so a lost notification delays a command by at most the poll interval.
CREATE TABLE commands (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    routing_key text        NOT NULL DEFAULT '',
    body        bytea       NOT NULL DEFAULT '',
    -- Basic properties as plain JSON: {"message_id": "order-42", "content_type": "..."}.
    properties  jsonb       NOT NULL DEFAULT '{}',
    -- The header table as plain JSON: {"x-delay": 60000, "x-cron": "0 9 * * *"}.
    headers     jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE commands IS 'the SQL intake: commands hourglass has not taken yet (docs/reference.md §3.4)';

CREATE TABLE command_receipts (
    command_id bigint      PRIMARY KEY,
    job_id     text        NOT NULL,
    status     text        NOT NULL,
    due_at     timestamptz,
    error      text,
    count      bigint,
    decided_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE command_receipts IS 'the receipt of each command taken from hourglass.commands, by its id (deleted --retention after)';
CREATE INDEX command_receipts_decided_at ON command_receipts (decided_at);

-- One channel for every schema (a channel name holds 63 bytes, a schema name as many): the
-- payload names the schema, and each hourglass wakes for its own. Pinned like migration 005's
-- functions; PostgreSQL does not check EXECUTE when a trigger fires, so PUBLIC needs none.
CREATE FUNCTION notify_commands() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_notify('hourglass_commands', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
REVOKE EXECUTE ON FUNCTION notify_commands() FROM PUBLIC;
CREATE TRIGGER commands_notify AFTER INSERT ON commands
    FOR EACH STATEMENT EXECUTE FUNCTION notify_commands();
