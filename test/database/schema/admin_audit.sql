-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE admin_audit (
  id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  actor text NOT NULL,
  role text NOT NULL,
  action text NOT NULL,
  target text NOT NULL,
  reason text NOT NULL,
  before_status text,
  after_status text,
  details jsonb,
  at timestamp with time zone NOT NULL DEFAULT now()
);

ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_pkey PRIMARY KEY (id);

CREATE INDEX admin_audit_at ON public.admin_audit USING btree (at, id);

CREATE UNIQUE INDEX admin_audit_pkey ON public.admin_audit USING btree (id);

CREATE INDEX admin_audit_target ON public.admin_audit USING btree (target);
