-- The running instances and their last heartbeat, with the database's clock to age them by.
SELECT id, floor(extract(epoch FROM started_at) * 1000)::bigint,
       floor(extract(epoch FROM heartbeat_at) * 1000)::bigint,
       floor(extract(epoch FROM now()) * 1000)::bigint
FROM instances ORDER BY id LIMIT 100
