-- Housekeeping prunes the event outbox (src/platform/events/retention.ts): by age, keeping
-- events that undelivered fan-out still needs (a queued fan-out job, an unsettled attempt).
create index event_outbox_occurred on event_outbox (occurred_at);
create index webhook_deliveries_unsettled on webhook_deliveries (event_id) where status in ('pending', 'failed');
