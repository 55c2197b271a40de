/**
 * Payload minimisation (an endpoint's `omit`): JSON paths of dot-separated keys
 * dropped from the body before it is stored. An array on the way applies the rest
 * of the path to each of its elements, so `data.object.charges.data.billing_details`
 * reaches every charge.
 */

import { PayloadTooDeepError } from '../common/errors';
import { MAX_PAYLOAD_DEPTH } from '../common/json-depth';

/** `json` (a verified JSON text) without the `paths`; unchanged text when none is present. */
export function omitPaths(json: string, paths: readonly string[]): string {
  const value: unknown = JSON.parse(json);
  let removed = false;
  for (const path of paths) removed = drop(value, path.split('.'), 0) || removed;
  return removed ? JSON.stringify(value) : json;
}

/** Recurses once per level: bodies past MAX_PAYLOAD_DEPTH are refused at receipt, and refused here too if one gets this far. */
function drop(value: unknown, keys: string[], depth: number): boolean {
  if (depth > MAX_PAYLOAD_DEPTH) throw new PayloadTooDeepError(MAX_PAYLOAD_DEPTH);
  if (Array.isArray(value)) return value.map((element) => drop(element, keys, depth + 1)).some(Boolean);
  if (typeof value !== 'object' || value === null) return false;
  const object = value as Record<string, unknown>;
  const [key, ...rest] = keys;
  if (!Object.prototype.hasOwnProperty.call(object, key)) return false;
  if (rest.length > 0) return drop(object[key], rest, depth + 1);
  delete object[key];
  return true;
}

/** Whether dropping `omitted` changes what a reader of `read` sees: one path is the other or lies inside it. */
export function pathsOverlap(omitted: string, read: string): boolean {
  const a = omitted.split('.');
  const b = read.split('.');
  const common = Math.min(a.length, b.length);
  return a.slice(0, common).every((key, i) => key === b[i]);
}
