-- Management API budgets (docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send write is counted
-- per address", Management): one fixed-window counter per caller, an API key or a Dashboard
-- user, whatever Environment or Workspace it reaches, so the rows are not per Environment like
-- rate_limit_counters. Windows come from the application's Clock; housekeeping deletes ended ones.

create table caller_rate_counters (
  bucket text not null,
  subject text not null,
  window_start timestamptz not null,
  window_end timestamptz not null,
  hits integer not null,
  primary key (bucket, subject, window_start)
);
create index caller_rate_counters_expiry on caller_rate_counters (window_end);
