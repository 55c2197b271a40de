-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE webhook_inbox_attempts (
  inbox_id bigint NOT NULL,
  attempt integer NOT NULL,
  at timestamp with time zone NOT NULL,
  lease text,
  outcome text NOT NULL,
  reason text,
  error text
);

ALTER TABLE webhook_inbox_attempts ADD CONSTRAINT webhook_inbox_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['done'::text, 'ignored'::text, 'quarantined'::text, 'retry'::text, 'lease_expired'::text])));

CREATE INDEX webhook_inbox_attempts_at ON public.webhook_inbox_attempts USING btree (at);

CREATE INDEX webhook_inbox_attempts_inbox ON public.webhook_inbox_attempts USING btree (inbox_id);
