-- Streaming user import (docs/decisions/user-import-export.md). A CSV source too large
-- to import inside the creating request is imported by the graphile-worker task
-- `user_import.run` in batches, one transaction per batch.

-- The full source URL (its query string may carry a credential, so `source_url` keeps only
-- scheme://host/path) sealed under MASTER_KEY for the worker's fetches; wiped when the job ends.
alter table user_import_jobs add column source_url_sealed text;
-- Data rows whose outcome is committed (users, events, row errors and counters commit with it
-- in one batch transaction): a re-run of the task resumes after this row and never repeats one.
alter table user_import_jobs add column rows_done integer not null default 0;

-- The CSV line of a row error, as csv-parse counts lines (1 is the header; a record with a
-- quoted line break reports its last line); null for JSON rows.
alter table user_import_job_errors add column line_number integer;
