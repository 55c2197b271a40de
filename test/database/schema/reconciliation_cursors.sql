-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE reconciliation_cursors (
  endpoint_id text NOT NULL,
  cursor_at timestamp with time zone NOT NULL,
  last_success_at timestamp with time zone,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

ALTER TABLE reconciliation_cursors ADD CONSTRAINT reconciliation_cursors_pkey PRIMARY KEY (endpoint_id);

CREATE UNIQUE INDEX reconciliation_cursors_pkey ON public.reconciliation_cursors USING btree (endpoint_id);
