-- Custom-UI social login and /me identity linking are bound to the browser that came back from
-- the provider (docs/decisions/social-login.md, Social login: "Custom UI: the completion proof" and "/me link:
-- the callback no longer links"). Without these, a provider authorization URL started by an
-- attacker and opened by a victim already signed in at the provider signed the victim in on the
-- attacker's transaction, or linked the victim's provider account to the attacker's user.

-- The one-time completion proof a custom-UI transaction's social callback hands to the browser
-- (256-bit random; only its SHA-256 is kept). `complete` of a social transaction must present
-- it; it is cleared when the code is issued. It lives no longer than the transaction.
alter table auth_transactions add column social_proof_hash text;

-- A /me link: the session that started it (the confirm must come from the same user, client
-- and session), then what the callback verified (provider subject, issuer, subject claim, email;
-- sealed with AES-256-GCM bound to this row), the one-time link code handed to the browser
-- (SHA-256 kept) and when it was used.
alter table social_states add column session_id text;
alter table social_states add column link_result_sealed text;
alter table social_states add column link_code_hash text unique;
alter table social_states add column link_confirmed_at timestamptz;
