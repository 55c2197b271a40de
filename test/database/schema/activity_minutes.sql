-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE activity_minutes (
  minute timestamp with time zone NOT NULL,
  kind text NOT NULL,
  scope text NOT NULL,
  tenant_id text NOT NULL,
  accepted integer NOT NULL DEFAULT 0,
  done integer NOT NULL DEFAULT 0,
  quarantined integer NOT NULL DEFAULT 0,
  delivered integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  backlog integer,
  oldest_pending_age_seconds integer
);

ALTER TABLE activity_minutes ADD CONSTRAINT activity_minutes_kind_check CHECK ((kind = ANY (ARRAY['endpoint'::text, 'destination'::text])));

ALTER TABLE activity_minutes ADD CONSTRAINT activity_minutes_pkey PRIMARY KEY (minute, kind, scope, tenant_id);

CREATE UNIQUE INDEX activity_minutes_pkey ON public.activity_minutes USING btree (minute, kind, scope, tenant_id);
