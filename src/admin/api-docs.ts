import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiQuery, ApiResponse } from '@nestjs/swagger';
import { z } from 'zod';

export const ADMIN_BEARER = 'admin';

type JsonSchema = { properties?: Record<string, object>; required?: string[] };

function jsonSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** Documents the query parameters of a zod query schema (the schema stays the single source). */
export function ApiZodQuery(schema: z.ZodType) {
  const s = jsonSchema(schema);
  return applyDecorators(
    ...Object.entries(s.properties ?? {}).map(([name, prop]) =>
      ApiQuery({ name, required: s.required?.includes(name) ?? false, schema: prop as never }),
    ),
  );
}

export function ApiZodBody(schema: z.ZodType) {
  return ApiBody({ schema: jsonSchema(schema) as never });
}

/** Bearer auth plus the auth failures every admin route shares. */
export function ApiAdmin() {
  return applyDecorators(
    ApiBearerAuth(ADMIN_BEARER),
    ApiResponse({ status: 401, description: '`missing_token` or `invalid_token`' }),
    ApiResponse({ status: 403, description: '`insufficient_role`' }),
  );
}
