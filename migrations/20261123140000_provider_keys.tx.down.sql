DROP TABLE IF EXISTS provider_keys;
