-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE outbox (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  operation_key text NOT NULL,
  destination text NOT NULL,
  operation_type text NOT NULL,
  tenant_id text NOT NULL,
  payload jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  locked_by text,
  locked_until timestamp with time zone,
  last_error text,
  last_status_code integer,
  outcome_unknown boolean NOT NULL DEFAULT false,
  source_event_id bigint,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  delivered_at timestamp with time zone,
  aggregate text,
  aggregate_seq integer,
  trace_context text
) WITH (fillfactor=80, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_insert_scale_factor=0.05, autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0);

ALTER TABLE outbox ADD CONSTRAINT outbox_operation_key UNIQUE (operation_key);

ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivering'::text, 'delivered'::text, 'unresolved'::text, 'dead'::text])));

CREATE UNIQUE INDEX outbox_aggregate ON public.outbox USING btree (tenant_id, aggregate, aggregate_seq) WHERE (aggregate IS NOT NULL);

CREATE INDEX outbox_created ON public.outbox USING btree (created_at, id);

CREATE INDEX outbox_due_destination_tenant ON public.outbox USING btree (destination, tenant_id, next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX outbox_leased ON public.outbox USING btree (locked_until) WHERE (status = 'delivering'::text);

CREATE UNIQUE INDEX outbox_operation_key ON public.outbox USING btree (operation_key);

CREATE UNIQUE INDEX outbox_pkey ON public.outbox USING btree (id);

CREATE INDEX outbox_source_event ON public.outbox USING btree (source_event_id);
