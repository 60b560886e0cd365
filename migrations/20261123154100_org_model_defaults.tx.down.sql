ALTER TABLE organizations DROP COLUMN IF EXISTS model_defaults;
