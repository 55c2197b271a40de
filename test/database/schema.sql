-- The schema after every migration, written by test/database/schema.int-spec.ts: do not edit by hand.

CREATE TABLE admin_audit (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  actor text NOT NULL,
  role text NOT NULL,
  action text NOT NULL,
  target text NOT NULL,
  reason text NOT NULL,
  before_status text,
  after_status text,
  details jsonb,
  at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE order_transitions (
  tenant_id text NOT NULL,
  order_id text NOT NULL,
  inbox_id bigint NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  at timestamp with time zone NOT NULL
);

CREATE TABLE orders (
  tenant_id text NOT NULL,
  id text NOT NULL,
  status text NOT NULL,
  provider_payment_id text,
  total_minor bigint NOT NULL,
  currency text NOT NULL,
  customer_email text NOT NULL,
  last_payment_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
) WITH (fillfactor=90);

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

CREATE TABLE outbox_attempts (
  outbox_id bigint NOT NULL,
  attempt integer NOT NULL,
  at timestamp with time zone NOT NULL,
  lease text NOT NULL,
  outcome text NOT NULL,
  status_code integer,
  duration_ms integer,
  outcome_query text,
  retry_after_ms integer,
  error text
);

CREATE TABLE outbox_destinations (
  destination text NOT NULL,
  circuit text NOT NULL DEFAULT 'closed'::text,
  failures integer NOT NULL DEFAULT 0,
  retry_at timestamp with time zone,
  probe_until timestamp with time zone,
  paused_until timestamp with time zone,
  tokens double precision,
  tokens_at timestamp with time zone,
  last_error text,
  changed_at timestamp with time zone,
  version bigint NOT NULL DEFAULT 0
);

CREATE TABLE provider_read_budget (
  key_id text NOT NULL,
  tokens double precision NOT NULL,
  refilled_at timestamp with time zone NOT NULL,
  granted integer NOT NULL DEFAULT 0
);

CREATE TABLE reconciliation_cursors (
  endpoint_id text NOT NULL,
  cursor_at timestamp with time zone NOT NULL,
  last_success_at timestamp with time zone,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE reconciliation_runs (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  endpoint_id text NOT NULL,
  requested_by text NOT NULL,
  reason text NOT NULL,
  dry_run boolean NOT NULL DEFAULT false,
  window_from timestamp with time zone,
  window_to timestamp with time zone,
  advances_cursor boolean NOT NULL,
  status text NOT NULL DEFAULT 'requested'::text,
  position text,
  listed integer NOT NULL DEFAULT 0,
  found_missing integer NOT NULL DEFAULT 0,
  accepted integer NOT NULL DEFAULT 0,
  api_calls integer NOT NULL DEFAULT 0,
  error text,
  locked_by text,
  locked_until timestamp with time zone,
  requested_at timestamp with time zone NOT NULL DEFAULT now(),
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  outcomes jsonb
);

CREATE TABLE schema_migrations (
  id integer NOT NULL DEFAULT nextval('schema_migrations_id_seq'::regclass),
  timestamp bigint NOT NULL,
  name character varying NOT NULL
);

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
  trace_context text
) WITH (fillfactor=80, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_insert_scale_factor=0.05, autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0);

CREATE TABLE webhook_inbox_attempts (
  inbox_id bigint NOT NULL,
  attempt integer NOT NULL,
  at timestamp with time zone NOT NULL,
  lease text,
  outcome text NOT NULL,
  reason text,
  error text
);

ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_pkey PRIMARY KEY (id);

ALTER TABLE orders ADD CONSTRAINT orders_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text));

ALTER TABLE orders ADD CONSTRAINT orders_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK ((status = ANY (ARRAY['awaiting_payment'::text, 'paid'::text, 'refunded'::text, 'canceled'::text])));

ALTER TABLE orders ADD CONSTRAINT orders_total_minor_check CHECK ((total_minor >= 0));

ALTER TABLE outbox ADD CONSTRAINT outbox_operation_key UNIQUE (operation_key);

ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivering'::text, 'delivered'::text, 'unresolved'::text, 'dead'::text])));

ALTER TABLE outbox_attempts ADD CONSTRAINT outbox_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retry'::text, 'dead'::text, 'unresolved'::text])));

ALTER TABLE outbox_attempts ADD CONSTRAINT outbox_attempts_outcome_query_check CHECK ((outcome_query = ANY (ARRAY['applied'::text, 'not_applied'::text, 'unknown'::text])));

ALTER TABLE outbox_destinations ADD CONSTRAINT outbox_destinations_circuit_check CHECK ((circuit = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])));

ALTER TABLE outbox_destinations ADD CONSTRAINT outbox_destinations_pkey PRIMARY KEY (destination);

ALTER TABLE provider_read_budget ADD CONSTRAINT provider_read_budget_pkey PRIMARY KEY (key_id);

ALTER TABLE reconciliation_cursors ADD CONSTRAINT reconciliation_cursors_pkey PRIMARY KEY (endpoint_id);

ALTER TABLE reconciliation_runs ADD CONSTRAINT reconciliation_runs_pkey PRIMARY KEY (id);

ALTER TABLE reconciliation_runs ADD CONSTRAINT reconciliation_runs_status_check CHECK ((status = ANY (ARRAY['requested'::text, 'running'::text, 'succeeded'::text, 'failed'::text])));

ALTER TABLE schema_migrations ADD CONSTRAINT PK_62441bec32630ced9e4cccae336 PRIMARY KEY (id);

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_identity UNIQUE (source_scope, event_id);

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_payload_sha256_check CHECK ((payload_sha256 ~ '^[0-9a-f]{64}$'::text));

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_pkey PRIMARY KEY (id);

ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'done'::text, 'ignored'::text, 'quarantined'::text])));

ALTER TABLE webhook_inbox_attempts ADD CONSTRAINT webhook_inbox_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['done'::text, 'ignored'::text, 'quarantined'::text, 'retry'::text, 'lease_expired'::text])));

CREATE INDEX admin_audit_at ON public.admin_audit USING btree (at, id);

CREATE UNIQUE INDEX admin_audit_pkey ON public.admin_audit USING btree (id);

CREATE INDEX admin_audit_target ON public.admin_audit USING btree (target);

CREATE INDEX order_transitions_inbox ON public.order_transitions USING btree (inbox_id);

CREATE INDEX order_transitions_order ON public.order_transitions USING btree (tenant_id, order_id);

CREATE INDEX orders_created ON public.orders USING btree (created_at);

CREATE UNIQUE INDEX orders_payment ON public.orders USING btree (tenant_id, provider_payment_id) WHERE (provider_payment_id IS NOT NULL);

CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (tenant_id, id);

CREATE UNIQUE INDEX outbox_aggregate ON public.outbox USING btree (tenant_id, aggregate, aggregate_seq) WHERE (aggregate IS NOT NULL);

CREATE INDEX outbox_created ON public.outbox USING btree (created_at, id);

CREATE INDEX outbox_due_destination_tenant ON public.outbox USING btree (destination, tenant_id, next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX outbox_leased ON public.outbox USING btree (locked_until) WHERE (status = 'delivering'::text);

CREATE UNIQUE INDEX outbox_operation_key ON public.outbox USING btree (operation_key);

CREATE UNIQUE INDEX outbox_pkey ON public.outbox USING btree (id);

CREATE INDEX outbox_source_event ON public.outbox USING btree (source_event_id);

CREATE INDEX outbox_attempts_outbox ON public.outbox_attempts USING btree (outbox_id);

CREATE UNIQUE INDEX outbox_destinations_pkey ON public.outbox_destinations USING btree (destination);

CREATE UNIQUE INDEX provider_read_budget_pkey ON public.provider_read_budget USING btree (key_id);

CREATE UNIQUE INDEX reconciliation_cursors_pkey ON public.reconciliation_cursors USING btree (endpoint_id);

CREATE INDEX reconciliation_runs_endpoint ON public.reconciliation_runs USING btree (endpoint_id, id);

CREATE UNIQUE INDEX reconciliation_runs_one_requested ON public.reconciliation_runs USING btree (endpoint_id) WHERE (status = 'requested'::text);

CREATE UNIQUE INDEX reconciliation_runs_one_running ON public.reconciliation_runs USING btree (endpoint_id) WHERE (status = 'running'::text);

CREATE UNIQUE INDEX reconciliation_runs_pkey ON public.reconciliation_runs USING btree (id);

CREATE UNIQUE INDEX "PK_62441bec32630ced9e4cccae336" ON public.schema_migrations USING btree (id);

CREATE INDEX webhook_inbox_due_tenant ON public.webhook_inbox USING btree (tenant_id, next_attempt_at) WHERE (status = 'pending'::text);

CREATE UNIQUE INDEX webhook_inbox_identity ON public.webhook_inbox USING btree (source_scope, event_id);

CREATE INDEX webhook_inbox_leased ON public.webhook_inbox USING btree (locked_until) WHERE (status = 'processing'::text);

CREATE INDEX webhook_inbox_payload_expiry ON public.webhook_inbox USING btree (received_at) WHERE (((payload IS NOT NULL) OR (payload_sealed IS NOT NULL)) AND (status = ANY (ARRAY['done'::text, 'ignored'::text])));

CREATE INDEX webhook_inbox_payload_key ON public.webhook_inbox USING btree (payload_key_id, id) WHERE ((payload IS NOT NULL) OR (payload_sealed IS NOT NULL));

CREATE UNIQUE INDEX webhook_inbox_pkey ON public.webhook_inbox USING btree (id);

CREATE INDEX webhook_inbox_received ON public.webhook_inbox USING btree (received_at, id);

CREATE INDEX webhook_inbox_attempts_inbox ON public.webhook_inbox_attempts USING btree (inbox_id);

CREATE OR REPLACE FUNCTION public.expect_rows(actual bigint, expected bigint, reason text)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF actual IS DISTINCT FROM expected THEN
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = reason, DETAIL = format('%s rows, %s expected', actual, expected);
        END IF;
        RETURN actual;
      END $function$
;
