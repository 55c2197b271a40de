-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE orders (
  tenant_id text NOT NULL,
  id text NOT NULL,
  status text NOT NULL,
  provider_payment_id text,
  total_minor bigint NOT NULL,
  currency text NOT NULL,
  customer_email text NOT NULL,
  last_payment_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
) WITH (fillfactor=90);

ALTER TABLE orders ADD CONSTRAINT orders_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text));

ALTER TABLE orders ADD CONSTRAINT orders_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK ((status = ANY (ARRAY['awaiting_payment'::text, 'paid'::text, 'refunded'::text, 'canceled'::text])));

ALTER TABLE orders ADD CONSTRAINT orders_total_minor_check CHECK ((total_minor >= 0));

CREATE INDEX orders_created ON public.orders USING btree (created_at);

CREATE UNIQUE INDEX orders_payment ON public.orders USING btree (tenant_id, provider_payment_id) WHERE (provider_payment_id IS NOT NULL);

CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (tenant_id, id);
