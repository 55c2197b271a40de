-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

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

ALTER TABLE outbox_attempts ADD CONSTRAINT outbox_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retry'::text, 'dead'::text, 'unresolved'::text])));

ALTER TABLE outbox_attempts ADD CONSTRAINT outbox_attempts_outcome_query_check CHECK ((outcome_query = ANY (ARRAY['applied'::text, 'not_applied'::text, 'unknown'::text])));

CREATE INDEX outbox_attempts_at ON public.outbox_attempts USING btree (at);

CREATE INDEX outbox_attempts_outbox ON public.outbox_attempts USING btree (outbox_id);
