-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE webhook_inbox_time_keys (
  singleton boolean NOT NULL DEFAULT true,
  keyed_from timestamp with time zone NOT NULL,
  switched_at timestamp with time zone NOT NULL DEFAULT now()
);

ALTER TABLE webhook_inbox_time_keys ADD CONSTRAINT webhook_inbox_time_keys_pkey PRIMARY KEY (singleton);

ALTER TABLE webhook_inbox_time_keys ADD CONSTRAINT webhook_inbox_time_keys_singleton_check CHECK (singleton);

CREATE UNIQUE INDEX webhook_inbox_time_keys_pkey ON public.webhook_inbox_time_keys USING btree (singleton);
