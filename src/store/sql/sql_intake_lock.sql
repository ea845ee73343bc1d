-- One taker of the SQL intake per schema, so that a job's commands keep their order.
SELECT pg_try_advisory_xact_lock(hashtext('hourglass.sql_intake.' || current_schema()))
