-- A Hosted Login transaction's social callback finishes only in the browser bound to the
-- transaction (its login cookie lives on the Interaction Domain, which the provider's
-- callback may not reach: managed callbacks land on the issuer host, Apple posts cross-site).
-- The callback keeps the provider's answer here, sealed, and sends the browser to the
-- Interaction Domain with a one-time hand-off token (SHA-256 kept); there the cookie is checked
-- before the answer is used.
alter table social_states add column callback_sealed text;
alter table social_states add column handoff_token_hash text unique;
alter table social_states add column handoff_used_at timestamptz;
