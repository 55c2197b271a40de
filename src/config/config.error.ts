import { resolve } from 'node:path';
/** A bad setting: one line per mistake, each naming the variable or file field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * A `*_FILE` setting's value for an error message: the path, unless it does not look like one (a
 * key or a PEM pasted where its path goes, an easy mix-up), which is never echoed.
 */
export function pathForMessage(value: string): string {
  return /^[^:\n\r]{1,255}$/.test(value) && !value.includes('-----BEGIN') ? resolve(value) : '(the value is not a file path; not shown)';
}
