-- Signing-key rotation that publishes the next key before it signs (docs/decisions/security-hardening.md): a `next` key
-- is in the JWKS but unused until `cli signing-keys rotate` promotes it, after the
-- publish-ahead period has let verifiers refresh their cached JWKS.
alter table signing_keys drop constraint signing_keys_status_check;
alter table signing_keys add constraint signing_keys_status_check check (status in ('next', 'active', 'retired'));
alter table signing_keys add column published_at timestamptz;
create unique index signing_keys_one_next on signing_keys (environment_id) where status = 'next';
