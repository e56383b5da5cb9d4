-- One live connection per provider per Environment: the social login paths name only the
-- provider (`/social/{provider}/start`), so two live connections of one provider would be
-- ambiguous. provider_key (the `provider` string of identities and events) is unique too.
-- The service checks first under an advisory lock; these indexes are the backstop.
create unique index connections_env_provider on connections (environment_id, provider) where deleted_at is null;
create unique index connections_env_provider_key on connections (environment_id, provider_key) where deleted_at is null;
