-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

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

ALTER TABLE outbox_destinations ADD CONSTRAINT outbox_destinations_circuit_check CHECK ((circuit = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])));

ALTER TABLE outbox_destinations ADD CONSTRAINT outbox_destinations_pkey PRIMARY KEY (destination);

CREATE UNIQUE INDEX outbox_destinations_pkey ON public.outbox_destinations USING btree (destination);
