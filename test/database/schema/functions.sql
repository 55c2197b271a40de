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
