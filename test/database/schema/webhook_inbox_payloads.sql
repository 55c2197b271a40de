-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE webhook_inbox_payloads (
  day date NOT NULL,
  inbox_id bigint NOT NULL,
  payload jsonb,
  payload_sealed bytea,
  payload_key_id text
) PARTITION BY RANGE (day);

ALTER TABLE webhook_inbox_payloads ADD CONSTRAINT webhook_inbox_payloads_pkey PRIMARY KEY (day, inbox_id);

CREATE INDEX webhook_inbox_payloads_key ON ONLY public.webhook_inbox_payloads USING btree (payload_key_id, inbox_id);

CREATE UNIQUE INDEX webhook_inbox_payloads_pkey ON ONLY public.webhook_inbox_payloads USING btree (day, inbox_id);
