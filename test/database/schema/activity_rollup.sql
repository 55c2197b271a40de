-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE activity_rollup (
  id boolean NOT NULL DEFAULT true,
  rolled_to timestamp with time zone NOT NULL
);

ALTER TABLE activity_rollup ADD CONSTRAINT activity_rollup_id_check CHECK (id);

ALTER TABLE activity_rollup ADD CONSTRAINT activity_rollup_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX activity_rollup_pkey ON public.activity_rollup USING btree (id);
