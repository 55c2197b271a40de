/** A bad setting: one line per mistake, each naming the variable or file field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
