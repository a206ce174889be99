"""Outbound webhooks: endpoints an admin registers, an outbox row per event, signed deliveries retried for a day."""
