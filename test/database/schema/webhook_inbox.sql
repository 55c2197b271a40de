-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE webhook_inbox (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  source_scope text NOT NULL,
  event_id text NOT NULL,
  tenant_id text NOT NULL,
  provider text NOT NULL,
  endpoint_id text NOT NULL,
  event_type text NOT NULL,
  payload jsonb,
  payload_sha256 text NOT NULL,
  verified_with text NOT NULL,
  status text NOT NULL,
  status_reason text,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  locked_by text,
  locked_until timestamp with time zone,
  last_error text,
  received_at timestamp with time zone NOT NULL DEFAULT now(),
  completed_at timestamp with time zone,
  deliveries integer NOT NULL DEFAULT 1,
  last_delivery_at timestamp with time zone NOT NULL DEFAULT now(),
  digest_conflicts integer NOT NULL DEFAULT 0,
  source_facts jsonb,
  confirmation jsonb,
  payload_sealed bytea,
  payload_key_id text,
  trace_context text,
  identity_at timestamp with time zone
) WITH (fillfactor=80, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_insert_scale_factor=0.05, autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0);

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_payload_sha256_check CHECK ((payload_sha256 ~ '^[0-9a-f]{64}$'::text));

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_pkey PRIMARY KEY (id);

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'done'::text, 'ignored'::text, 'quarantined'::text])));

CREATE INDEX webhook_inbox_due_tenant ON public.webhook_inbox USING btree (tenant_id, next_attempt_at) WHERE (status = 'pending'::text);

CREATE UNIQUE INDEX webhook_inbox_identity_time ON public.webhook_inbox USING btree (identity_at, source_scope, event_id) NULLS NOT DISTINCT;

CREATE INDEX webhook_inbox_leased ON public.webhook_inbox USING btree (locked_until) WHERE (status = 'processing'::text);

CREATE INDEX webhook_inbox_payload_expiry ON public.webhook_inbox USING btree (received_at) WHERE (((payload IS NOT NULL) OR (payload_sealed IS NOT NULL)) AND (status = ANY (ARRAY['done'::text, 'ignored'::text])));

CREATE INDEX webhook_inbox_payload_key ON public.webhook_inbox USING btree (payload_key_id, id) WHERE ((payload IS NOT NULL) OR (payload_sealed IS NOT NULL));

CREATE UNIQUE INDEX webhook_inbox_pkey ON public.webhook_inbox USING btree (id);

CREATE INDEX webhook_inbox_received ON public.webhook_inbox USING btree (received_at, id);
