-- Streaming user export (docs/decisions/user-import-export.md). The artifact is built
-- and stored as a sequence of sealed chunks (at most 64 KiB of JSON each, AES-256-GCM under
-- MASTER_KEY, each bound to its job and position), so neither its creation nor its download
-- holds the whole artifact in memory. `user_export_jobs.artifact_sealed` stays for exports
-- made before this migration.
create table user_export_chunks (
  job_id text not null references user_export_jobs(id) on delete cascade,
  seq integer not null,
  sealed text not null,
  primary key (job_id, seq)
);

alter table user_export_jobs add column artifact_chunks integer;
create index user_export_jobs_purge_chunks on user_export_jobs (download_expires_at) where artifact_chunks is not null and artifact_purged_at is null;

-- The export reads a user's sessions in keyset pages by (created_at, id).
create index login_sessions_user_created on login_sessions (user_id, created_at, id);
