-- The attachments a record's run read (issue 29), as they were then: the
-- record keeps them when an attachment is later deleted.
ALTER TABLE records ADD COLUMN attachments jsonb;
