-- Rate-limit counters in Postgres, shared by every replica (docs/architecture.md: nothing a replica needs
-- lives in process memory). Fixed windows whose start is computed from the application's
-- Clock; one row per Environment + bucket + subject + window. Subjects are HMACs (never a
-- raw email or IP address).

create table rate_limit_counters (
  environment_id text not null references environments(id),
  bucket text not null,
  subject text not null,
  window_start timestamptz not null,
  window_end timestamptz not null,
  hits integer not null,
  primary key (environment_id, bucket, subject, window_start)
);
create index rate_limit_counters_expiry on rate_limit_counters (window_end);
