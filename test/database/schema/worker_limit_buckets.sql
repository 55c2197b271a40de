-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE worker_limit_buckets (
  key text NOT NULL,
  tokens double precision NOT NULL,
  refilled_at timestamp with time zone NOT NULL DEFAULT now()
);

ALTER TABLE worker_limit_buckets ADD CONSTRAINT worker_limit_buckets_pkey PRIMARY KEY (key);

CREATE UNIQUE INDEX worker_limit_buckets_pkey ON public.worker_limit_buckets USING btree (key);
