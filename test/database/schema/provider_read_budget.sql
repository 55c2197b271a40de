-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE provider_read_budget (
  key_id text NOT NULL,
  tokens double precision NOT NULL,
  refilled_at timestamp with time zone NOT NULL,
  granted integer NOT NULL DEFAULT 0
);

ALTER TABLE provider_read_budget ADD CONSTRAINT provider_read_budget_pkey PRIMARY KEY (key_id);

CREATE UNIQUE INDEX provider_read_budget_pkey ON public.provider_read_budget USING btree (key_id);
