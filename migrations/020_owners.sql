-- Jobs that belong to someone (reference §3.5, docs/operating.md "Owners"). Each job records
-- the owner of the command that scheduled it: for the SQL intake the role that inserted the
-- command, set by PostgreSQL; for AMQP the user_id RabbitMQ validated, or --amqp-default-owner.
-- With --command-scope owner, a command acts only on jobs of its own owner.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT '';
COMMENT ON COLUMN jobs.owner IS
    'who scheduled the job: the inserting role (SQL intake), the validated user_id or --amqp-default-owner (AMQP)';

-- The inserting role, written by PostgreSQL: a role granted INSERT on the documented columns
-- cannot name this one, and the policy below refuses any other value from a role granted more.
ALTER TABLE commands ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT current_user;
ALTER TABLE command_receipts ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT '';

-- Each role sees, inserts and reads back only its own commands and receipts. hourglass's role
-- owns both tables and is not subject to these policies (nor are superusers or BYPASSRLS roles).
ALTER TABLE commands ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS commands_of_their_owner ON commands;
CREATE POLICY commands_of_their_owner ON commands
    USING (owner = current_user) WITH CHECK (owner = current_user);
ALTER TABLE command_receipts ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS receipts_of_their_owner ON command_receipts;
CREATE POLICY receipts_of_their_owner ON command_receipts USING (owner = current_user);
