/**
 * The one bound on how deeply a payload may nest objects and arrays. Every walk
 * of a payload (omit, redaction, erasure, the admin view) may recurse this deep
 * and no deeper: recursion past a few thousand levels overflows the stack, and
 * JSON.stringify fails from about 6,000. Real provider payloads (Stripe, GitHub,
 * Shopify, Slack) nest under 20 levels, so 256 leaves room and still stays far
 * from any stack limit.
 */
export const MAX_PAYLOAD_DEPTH = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether the JSON text `json` (UTF-8 bytes or a string) nests objects and arrays
 * deeper than `max` (a top-level `{}` is depth 1). One iterative pass that counts
 * braces and brackets outside strings: no parse, no recursion, so it is safe on
 * any input. It does not validate the JSON; on malformed text its answer only
 * says whether some prefix opened more than `max` levels.
 */
export function jsonDepthExceeds(json: Uint8Array | string, max: number = MAX_PAYLOAD_DEPTH): boolean {
  // One loop over bytes (a string is encoded first): kept monomorphic, it is on the webhook path.
  // UTF-8 continuation bytes are >= 0x80, so they never look like a quote, brace or bracket.
  const bytes = typeof json === 'string' ? Buffer.from(json, 'utf8') : json;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether the parsed value `value` nests objects and arrays deeper than `max`.
 * The walk itself recurses at most `max + 1` levels: it stops at the first level
 * past the bound, so it is safe on a value no unbounded walk could take.
 */
export function valueDepthExceeds(value: unknown, max: number = MAX_PAYLOAD_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  if (Array.isArray(value)) return value.some((element) => valueDepthExceeds(element, max - 1));
  for (const key in value) {
    if (valueDepthExceeds((value as Record<string, unknown>)[key], max - 1)) return true;
  }
  return false;
}
