-- The SECURITY DEFINER functions of migration 004 run with their owner's rights. Migration 004
-- gave them the search_path of the migration (FROM CURRENT): pin it explicitly instead, with
-- pg_catalog first and pg_temp last, so that no object another role creates (a temporary table
-- or function named like a catalog one) can stand in for the one they mean. And only the owner
-- runs them: the triggers fire whoever writes jobs (PostgreSQL does not check EXECUTE when a
-- trigger fires), and fold_job_counts() is hourglass's own; PUBLIC needs none of them.
DO $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['count_job_states()', 'reset_job_counts()', 'fold_job_counts()'] LOOP
        EXECUTE format('ALTER FUNCTION %I.%s SET search_path = pg_catalog, %I, pg_temp',
                       current_schema(), fn, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %I.%s FROM PUBLIC', current_schema(), fn);
    END LOOP;
END
$$;
