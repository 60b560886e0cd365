DROP TABLE IF EXISTS concept_migrations;
