-- HMAC data keys (docs/master-key-rotation.md). HMACs that must stay comparable for
-- longer than a master-key rotation (a bounce suppression's recipient hash, the 30-day memory of
-- addresses that signed in) are keyed by a random 256-bit key per purpose, kept here sealed under
-- MASTER_KEY (AES-256-GCM, bound to its purpose). The rotation re-seals it like any sealed value,
-- so those hashes survive the rotation; the key itself never changes. Created on first use
-- (insert ... on conflict do nothing: concurrent first uses agree on one key).
create table hmac_data_keys (
  purpose text primary key,
  key_sealed text not null,
  created_at timestamptz not null
);
