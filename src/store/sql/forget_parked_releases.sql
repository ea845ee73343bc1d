-- Parked releases ($1: id and run) once recorded.
DELETE FROM parked_releases p USING jsonb_to_recordset($1::jsonb)
AS x(id text, run integer) WHERE p.job_id = x.id AND p.run = x.run
