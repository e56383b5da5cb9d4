-- Monthly active users (spec: Limits "Free tier 30,000 MAU; thresholds 80, 95, 100 percent";
-- Events mau.threshold_reached). Billing months are UTC calendar months ('YYYY-MM').

-- One row per user active in a billing month: the insert is the idempotent "count once".
-- No foreign key to users: a user purged later still counted in the month it was active.
create table mau_users (
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  billing_month text not null check (billing_month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
  user_id text not null,
  first_active_at timestamptz not null,
  primary key (environment_id, billing_month, user_id)
);
create index mau_users_workspace_month on mau_users (workspace_id, billing_month);

-- The Workspace aggregate of a month. Its upsert takes the row lock that serialises
-- concurrent first logins of a Workspace, so each increment sees the previous one and a
-- threshold is crossed by exactly one transaction.
create table mau_counters (
  workspace_id text not null references workspaces(id),
  billing_month text not null check (billing_month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
  active_users integer not null check (active_users >= 0),
  primary key (workspace_id, billing_month)
);

-- A threshold reached in a month: the unique key makes mau.threshold_reached exactly once
-- per (Workspace, month, threshold), whatever races.
create table mau_thresholds (
  workspace_id text not null references workspaces(id),
  billing_month text not null check (billing_month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
  threshold_percent integer not null check (threshold_percent in (80, 95, 100)),
  current_mau integer not null,
  free_tier_limit integer not null,
  reached_at timestamptz not null,
  primary key (workspace_id, billing_month, threshold_percent)
);
