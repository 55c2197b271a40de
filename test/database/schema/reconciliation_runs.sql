-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

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

ALTER TABLE reconciliation_runs ADD CONSTRAINT reconciliation_runs_pkey PRIMARY KEY (id);

ALTER TABLE reconciliation_runs ADD CONSTRAINT reconciliation_runs_status_check CHECK ((status = ANY (ARRAY['requested'::text, 'running'::text, 'succeeded'::text, 'failed'::text])));

CREATE INDEX reconciliation_runs_endpoint ON public.reconciliation_runs USING btree (endpoint_id, id);

CREATE UNIQUE INDEX reconciliation_runs_one_requested ON public.reconciliation_runs USING btree (endpoint_id) WHERE (status = 'requested'::text);

CREATE UNIQUE INDEX reconciliation_runs_one_running ON public.reconciliation_runs USING btree (endpoint_id) WHERE (status = 'running'::text);

CREATE UNIQUE INDEX reconciliation_runs_pkey ON public.reconciliation_runs USING btree (id);
