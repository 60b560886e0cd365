DROP TABLE org_providers;
