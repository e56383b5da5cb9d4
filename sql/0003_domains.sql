-- Custom domains: the host dispatcher looks active ones up by hostname.
create table domains (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  hostname text not null,
  rp_enabled boolean not null default false,
  status text not null default 'pending' check (status in ('pending', 'active', 'failed')),
  validation_errors jsonb not null default '[]'::jsonb,
  verification_token text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  version integer not null default 1
);
create unique index domains_hostname on domains (hostname);
create index domains_environment_page on domains (environment_id, id);
