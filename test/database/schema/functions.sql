-- Written by test/database/schema.int-spec.ts after every migration: do not edit by hand.

CREATE OR REPLACE FUNCTION public.expect_rows(actual bigint, expected bigint, reason text)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF actual IS DISTINCT FROM expected THEN
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = reason, DETAIL = format('%s rows, %s expected', actual, expected);
        END IF;
        RETURN actual;
      END $function$
;

CREATE OR REPLACE FUNCTION public.webhook_inbox_payload_day(d date)
 RETURNS boolean
 LANGUAGE plpgsql
 SET lock_timeout TO '5s'
AS $function$
      DECLARE
        part text := 'webhook_inbox_payloads_' || to_char(d, 'YYYYMMDD');
      BEGIN
        -- One maker at a time (the retention job, every start, the forgetting of a day).
        PERFORM pg_advisory_xact_lock(hashtext('webhook_inbox_payloads'));
        IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass(part) AND inhparent = 'webhook_inbox_payloads'::regclass) THEN
          RETURN false;
        END IF;
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I (LIKE webhook_inbox_payloads INCLUDING DEFAULTS)', part);
        EXECUTE format('ALTER TABLE webhook_inbox_payloads ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, d, d + 1);
        RETURN true;
      END $function$
;
