-- User import and export jobs (spec: Management API, "Import / export jobs"; States "Import/export
-- job": pending, processing, completed, failed). The work runs inside the creating request.

create table user_import_jobs (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  format text not null check (format in ('json', 'csv')),
  -- scheme://host/path only: a query string often carries a credential (pre-signed URLs)
  source_url text not null,
  status text not null check (status in ('pending', 'processing', 'completed', 'failed')),
  total_rows integer not null default 0,
  imported_count integer not null default 0,
  skipped_count integer not null default 0,
  failed_count integer not null default 0,
  failure_code text,
  failure_message text,
  created_by_type text not null,
  created_by_id text,
  created_at timestamptz not null,
  started_at timestamptz,
  completed_at timestamptz
);
create index user_import_jobs_workspace on user_import_jobs (workspace_id, id);

-- One error per refused or skipped row; `row_number` counts data rows from 1.
create table user_import_job_errors (
  job_id text not null references user_import_jobs(id),
  row_number integer not null,
  code text not null,
  field text,
  message text not null,
  primary key (job_id, row_number)
);

create table user_export_jobs (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  target_user_id text not null references users(id),
  status text not null check (status in ('pending', 'processing', 'completed', 'failed')),
  -- the artifact (JSON), AES-256-GCM sealed under MASTER_KEY and bound to this row;
  -- wiped once the download window has passed
  artifact_sealed text,
  artifact_bytes integer,
  failure_code text,
  failure_message text,
  created_by_type text not null,
  created_by_id text,
  created_at timestamptz not null,
  completed_at timestamptz,
  download_expires_at timestamptz,
  artifact_purged_at timestamptz
);
create index user_export_jobs_workspace on user_export_jobs (workspace_id, id);
create index user_export_jobs_purge on user_export_jobs (download_expires_at) where artifact_sealed is not null;
