-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE order_transitions (
  tenant_id text NOT NULL,
  order_id text NOT NULL,
  inbox_id bigint NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  at timestamp with time zone NOT NULL
);

CREATE INDEX order_transitions_inbox ON public.order_transitions USING btree (inbox_id);

CREATE INDEX order_transitions_order ON public.order_transitions USING btree (tenant_id, order_id);
