/** The fewest bytes of key material a secret may have: 128 bits, less than any supported provider issues. */
export const MIN_KEY_BYTES = 16;

/** How a secret holds its key material: after a public prefix (`whsec_`), if there, in this encoding. */
export interface SecretForm {
  encoding: 'utf8' | 'base64' | 'hex';
  prefix?: string;
}

// Empty matches: nothing after the prefix is then "too short", the clearer message.
const SHAPES = { base64: /^(?:[A-Za-z0-9+/]+={0,2})?$/, hex: /^(?:[0-9a-fA-F]{2})*$/ };

/** The secret's key material: what only the sender and the endpoint know; undefined when it is not in `form`. */
export function keyMaterial(value: string, { encoding, prefix }: SecretForm): Buffer | undefined {
  const rest = prefix && value.startsWith(prefix) ? value.slice(prefix.length) : value;
  if (encoding === 'utf8') return Buffer.from(rest, 'utf8');
  return SHAPES[encoding].test(rest) ? Buffer.from(rest, encoding) : undefined;
}

/**
 * Why a secret may not be used, or undefined: not in its form, or too little key
 * material (a secret equal to its prefix would be an empty HMAC key anyone can
 * sign with). Names the rule, never the secret.
 */
export function secretProblem(value: string, form: SecretForm): string | undefined {
  const after = form.prefix ? ` after "${form.prefix}"` : '';
  const material = keyMaterial(value, form);
  if (!material) return `not ${form.encoding}${after}`;
  if (material.length >= MIN_KEY_BYTES) return undefined;
  return form.encoding === 'utf8'
    ? `the text${after} must be at least ${MIN_KEY_BYTES} bytes`
    : `the ${form.encoding}${after} must decode to at least ${MIN_KEY_BYTES} bytes`;
}
