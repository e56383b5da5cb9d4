-- Email OTP challenges (spec: Email OTP; Limits). The code is never stored: only
-- HMAC-SHA256 under a master-key pepper over challenge id + generation + code.

create table email_challenges (
  -- `chl_` + 32 characters of [a-z2-7]
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  transaction_id text not null references auth_transactions(id),
  purpose text not null check (purpose in ('login')),
  email text not null,
  email_normalized text not null,
  -- each resend increments it; the HMAC covers it, so earlier codes stop matching
  generation integer not null default 1,
  code_hmac text not null,
  -- wrong verifies across every generation of this challenge; the 5th invalidates it
  failed_attempts integer not null default 0,
  status text not null default 'active' check (status in ('active', 'verified', 'invalidated', 'superseded', 'consumed')),
  created_at timestamptz not null,
  last_sent_at timestamptz not null,
  expires_at timestamptz not null,
  finished_at timestamptz
);
-- "One valid code at a time per Environment + email + purpose": a new start supersedes the old one.
create unique index email_challenges_one_active on email_challenges (environment_id, email_normalized, purpose)
  where status = 'active';
create index email_challenges_transaction on email_challenges (transaction_id);
create index email_challenges_expiry on email_challenges (expires_at);
