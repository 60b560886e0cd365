-- The sweep's query for continued jobs that no worker claimed (running, no
-- owner): a partial index, so it holds only the few jobs between a continue
-- and their claim.
CREATE INDEX jobs_unclaimed_idx ON jobs (updated_at) WHERE state = 'running' AND owner = '';
