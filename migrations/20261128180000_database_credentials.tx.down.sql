DROP TABLE IF EXISTS database_credential_tokens;
--bun:split
DROP TABLE IF EXISTS database_credentials;
