DROP TABLE IF EXISTS invitations;
--bun:split
DROP TABLE IF EXISTS denied_tokens;
--bun:split
ALTER TABLE refresh_tokens DROP COLUMN IF EXISTS access_expires_at;
--bun:split
ALTER TABLE refresh_tokens DROP COLUMN IF EXISTS access_token_id;
--bun:split
DROP TABLE IF EXISTS login_failures;
