-- What one webhook attempt sent and got back, for the delivery log (docs/decisions/events-and-webhooks.md,
-- "Attempt request and response"). Written by the statement that settles the attempt; no extra round trip.
-- The request body is not stored: it is the event's envelope (event_outbox) as canonical JSON, and its
-- timestamp is occurred_at's second; only what cannot be rebuilt is kept. Never the webhook secret.
alter table webhook_deliveries
  -- The URL the attempt was sent to (the webhook's URL may change afterwards).
  add column request_url text,
  -- The X-Auth-Signature header sent (v1=<hex HMAC>): the secret cannot be derived from it.
  add column request_signature text,
  -- A bounded set of the response's headers (no cookies), and the first 4 KiB of its body.
  add column response_headers jsonb,
  add column response_body text,
  add column response_body_truncated boolean,
  -- Why no response came: timeout, connection_refused, connection_reset, dns_failure, tls_error,
  -- blocked_address, connection_failed.
  add column transport_error text;

-- Response headers and bodies may carry personal data: housekeeping clears them after 30 days
-- (the outbox keeps the request's envelope as long). Only records still holding them are indexed,
-- so each sweep reads just what it clears.
create index webhook_deliveries_exchange_retention on webhook_deliveries (occurred_at)
  where response_headers is not null or response_body is not null;
