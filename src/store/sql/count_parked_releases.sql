-- Releases parked while another transaction held their rows (migration 012).
SELECT count(*) FROM parked_releases
