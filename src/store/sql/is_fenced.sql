-- Whether $1 is fenced: read without a lock, before the beat's update, so that an instance
-- whose registration another transaction holds still learns of its fence at its next beat.
SELECT EXISTS (SELECT 1 FROM instance_fences WHERE id = $1)
