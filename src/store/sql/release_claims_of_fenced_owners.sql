-- The ownership rule's give-back (docs/architecture.md "Fencing"): the claims of fenced
-- instances none of whose sessions is still open. A fenced instance that still has a session
-- may yet commit the record of a run it published just before its grace ran out (a record
-- held up by a lock or a slow statement): its claims stay its own until it learns of the fence
-- and gives back itself what it never published (Claimer::forget_lost_claims), or until its
-- sessions end (a crash at once; a cut network within the keepalives' bound), which every
-- beat of a live instance looks for. Sessions are named after their instance (store::connect);
-- only this role's count, so that no other role can keep an instance's claims by its name.
-- Rows another transaction holds are passed by (the next beat looks again). Every beat that
-- may fence runs this: with no fence (nearly always) the EXISTS, a one-time filter, keeps it
-- from reading a single job row.
UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now()
WHERE id IN (
  SELECT id FROM jobs
  WHERE EXISTS (SELECT 1 FROM instance_fences) AND lease_owner IS NOT NULL AND lease_owner IN (
    SELECT f.id FROM instance_fences f
    WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                      WHERE a.usename = current_user AND a.application_name = 'hourglass ' || md5(f.id)))
  FOR UPDATE SKIP LOCKED)
