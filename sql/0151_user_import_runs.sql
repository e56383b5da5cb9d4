-- Runs of the worker task `user_import.run` for a job: a source that drops the connection or
-- falls silent is retried (the run resumes after `rows_done`) up to a bound, then the job fails.
alter table user_import_jobs add column runs integer not null default 0;
