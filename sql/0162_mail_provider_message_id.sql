-- After review (docs/decisions/billing-bounces-retention.md). Amazon SES replaces a mail's Message-ID and puts the original headers in
-- its notifications only when "Include original headers" is on. Its SMTP interface answers
-- `250 Ok <SES message id>` and every notification names that id (`mail.messageId`): the mail
-- job records it, so an SES bounce matches its delivery without the headers (src/bounces).
alter table mail_deliveries add column provider_message_id text;
create index mail_deliveries_provider_message on mail_deliveries (provider_message_id) where provider_message_id is not null;
