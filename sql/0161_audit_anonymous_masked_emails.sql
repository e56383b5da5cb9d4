-- After review (docs/decisions/billing-bounces-retention.md). Email OTP audit records written while no user had the address (no actor
-- id) no longer carry the masked address: nothing ties them to the user who registers it later,
-- so the purge could not redact them (decisions, "Audit records and personal data"). Records
-- written before this change lose it here, through the purge's own narrow redaction (sql/0155).
select set_config('authservice.audit_redaction', 'on', true);
update audit_events
  set details = (details - array['masked_email', 'masked_old_email', 'masked_new_email', 'note', 'reason'])
    || '{"personal_data_redacted": true}'::jsonb
  where action in ('login.email_otp_sent', 'login.email_otp_resent', 'login.failed')
    and actor_id is null and details ? 'masked_email';
select set_config('authservice.audit_redaction', 'off', true);
