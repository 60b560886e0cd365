DROP TABLE IF EXISTS attachment_blobs;
--bun:split
DROP TABLE IF EXISTS attachment_policies;
--bun:split
DROP TABLE IF EXISTS attachments;
