import { LATEST_INSTANT_MS } from '../common/clock';
import { BadRequestError } from '../common/errors';
import { PageKey } from '../common/pagination';

/** Opaque list cursor: base64url of `[epochMicros, id]`. Clients must not build it. */
export function encodeCursor(key: PageKey | undefined): string | null {
  return key ? Buffer.from(JSON.stringify([key.atUs, key.id])).toString('base64url') : null;
}

/** A cursor that does not parse is a 400: ignoring it would silently restart the list. */
export function decodeCursor(cursor: string | undefined): PageKey | undefined {
  if (cursor === undefined) return undefined;
  const invalid = () => new BadRequestError('invalid_cursor', 'cursor is not one this API issued');
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'string' ||
    typeof value[1] !== 'string' ||
    !/^\d{1,18}$/.test(value[0]) ||
    Number(value[0]) > LATEST_INSTANT_MS * 1000 + 999 ||
    !isBigintId(value[1])
  ) {
    throw invalid();
  }
  return { atUs: value[0], id: value[1] };
}

const MAX_BIGINT = 9223372036854775807n;

/** A positive PostgreSQL bigint in decimal. */
export function isBigintId(text: string): boolean {
  return /^[1-9]\d{0,18}$/.test(text) && BigInt(text) <= MAX_BIGINT;
}

/** Parses a path id; anything else is a 400, not a 404 or a 500. */
export function parseId(text: string): string {
  if (!isBigintId(text)) throw new BadRequestError('invalid_id', 'id must be a positive integer');
  return text;
}
