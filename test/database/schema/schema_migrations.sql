-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE TABLE schema_migrations (
  id integer NOT NULL DEFAULT nextval('schema_migrations_id_seq'::regclass),
  timestamp bigint NOT NULL,
  name character varying NOT NULL
);

ALTER TABLE schema_migrations ADD CONSTRAINT PK_62441bec32630ced9e4cccae336 PRIMARY KEY (id);

CREATE UNIQUE INDEX "PK_62441bec32630ced9e4cccae336" ON public.schema_migrations USING btree (id);
