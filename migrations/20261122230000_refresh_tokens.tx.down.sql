DROP TABLE IF EXISTS refresh_tokens;
