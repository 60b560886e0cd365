-- An organization's pinned default model per task (enrichment,
-- schema_generation, sample_generation), as {task: "provider::model"}.
ALTER TABLE organizations ADD COLUMN model_defaults jsonb NOT NULL DEFAULT '{}';
