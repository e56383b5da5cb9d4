-- Outbound mail and its bounces (src/bounces; event email.delivery.bounced).
-- One row per mail sent: the delivery id `dlv_...` is in the mail's Message-ID
-- (<dlv_...@PLATFORM_DOMAIN>) and X-Authservice-Delivery-Id header, so a bounce names it and
-- is tied to its Environment. The recipient is kept only as the event's `recipientHash`
-- (HMAC-SHA256 under a master-key-derived per-Workspace key, base64url), never in clear.
create table mail_deliveries (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  message_id text not null unique,
  recipient_hash text not null,
  purpose text not null,
  sent_at timestamptz not null
);
create index mail_deliveries_sent on mail_deliveries (sent_at);

-- Bounces received: one per delivery and type (a redelivered notification changes nothing).
create table mail_bounces (
  delivery_id text not null references mail_deliveries(id) on delete cascade,
  bounce_type text not null check (bounce_type in ('hard', 'soft')),
  source text not null check (source in ('generic', 'ses')),
  received_at timestamptz not null,
  primary key (delivery_id, bounce_type)
);

-- Addresses suppressed for Email OTP by a hard bounce, registered or not (by recipient hash).
create table email_suppressions (
  environment_id text not null references environments(id),
  recipient_hash text not null,
  delivery_id text not null,
  created_at timestamptz not null,
  primary key (environment_id, recipient_hash)
);
