DROP TABLE IF EXISTS concept_reviews;
