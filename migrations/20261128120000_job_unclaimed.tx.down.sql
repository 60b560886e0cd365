DROP INDEX IF EXISTS jobs_unclaimed_idx;
