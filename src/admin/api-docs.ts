import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiQuery, ApiResponse } from '@nestjs/swagger';
import type { OpenAPIObject } from '@nestjs/swagger';
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

// ---- Responses: zod schemas named in one registry, served as components.schemas ----

/** The named response schemas; each becomes `components.schemas[id]` (the console's generated types take these names). */
export const apiResponses = z.registry<{ id: string }>();

/** Registers a response schema under a component name. */
export function named<S extends z.ZodType>(id: string, schema: S): S {
  apiResponses.add(schema, { id });
  return schema;
}

const COMPONENT = (id: string) => `#/components/schemas/${id}`;

/** Every named response schema as OpenAPI 3.0 components (referencing each other by `$ref`). */
export function responseComponents(): NonNullable<OpenAPIObject['components']>['schemas'] {
  const { schemas } = z.toJSONSchema(apiResponses, {
    io: 'output',
    target: 'openapi-3.0',
    uri: COMPONENT,
    // A timestamp is documented by its format; the regex zod writes for it says nothing more to a reader.
    override: ({ jsonSchema }) => {
      if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
    },
  });
  return Object.fromEntries(Object.entries(schemas).map(([id, { $id: _uri, ...schema }]) => [id, schema as never]));
}

/** What a value becomes in a JSON answer: Dates as ISO strings, read-only arrays as arrays. */
export type Wire<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

type SameType<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** A decorator's return type that fails to compile, naming both sides, when the method's answer and its schema differ. */
type ResponseCheck<Returned, Documented> =
  SameType<Returned, Documented> extends true ? void : { 'the method returns': Returned; 'the schema documents': Documented };

/**
 * Documents a route's answer by a named zod schema. It compiles only when the method's
 * return type, as JSON (`Wire`), is the schema's output type: the document cannot drift
 * from what the controller returns.
 */
export function ApiZodResponse<S extends z.ZodType>(status: number, schema: S, description = 'OK') {
  const id = apiResponses.get(schema)?.id;
  if (!id) throw new Error('ApiZodResponse: the schema has no name; declare it with named(id, schema)');
  // The method's type is only checked here; `any` keeps every parameter list acceptable.
  return <M extends (...args: any[]) => unknown>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): ResponseCheck<Wire<Awaited<ReturnType<M>>>, z.output<S>> => {
    ApiResponse({ status, description, schema: { $ref: COMPONENT(id) } })(target, key, descriptor);
    return undefined as ResponseCheck<Wire<Awaited<ReturnType<M>>>, z.output<S>>;
  };
}
