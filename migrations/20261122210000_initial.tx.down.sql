DROP TABLE IF EXISTS job_events;
--bun:split
DROP TABLE IF EXISTS jobs;
--bun:split
DROP TABLE IF EXISTS records;
--bun:split
DROP TABLE IF EXISTS schemas;
--bun:split
DROP TABLE IF EXISTS api_keys;
--bun:split
DROP TABLE IF EXISTS users;
--bun:split
DROP TABLE IF EXISTS organizations;
