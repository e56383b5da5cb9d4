-- Custom-domain squatting (docs/decisions/security-hardening.md): a `pending` claim no longer reserves a hostname for
-- every tenant. Claims of one hostname by different Workspaces coexist; only the TXT proof
-- grants it, and an `active` hostname stays unique (a host routes to one Environment).
drop index domains_hostname;
create unique index domains_hostname_active on domains (hostname) where status = 'active';
-- One claim per hostname within a Workspace (a second one would only be a confusing copy).
create unique index domains_workspace_hostname on domains (workspace_id, hostname);
