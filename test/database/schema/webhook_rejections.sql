-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE webhook_rejections (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  at timestamp with time zone NOT NULL,
  endpoint_id text NOT NULL,
  tenant_id text NOT NULL,
  provider text NOT NULL,
  reason text NOT NULL,
  http_status smallint NOT NULL,
  remote_address text NOT NULL,
  declared_bytes bigint,
  received_bytes integer,
  unlogged_before integer NOT NULL DEFAULT 0
);

ALTER TABLE webhook_rejections ADD CONSTRAINT webhook_rejections_pkey PRIMARY KEY (id);

CREATE INDEX webhook_rejections_at ON public.webhook_rejections USING btree (at, id);

CREATE INDEX webhook_rejections_endpoint_at ON public.webhook_rejections USING btree (endpoint_id, at, id);

CREATE UNIQUE INDEX webhook_rejections_pkey ON public.webhook_rejections USING btree (id);
