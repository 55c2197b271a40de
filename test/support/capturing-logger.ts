import { LoggerService } from '@nestjs/common';

/** Keeps every log line of an app instance as text, so tests can grep for leaks. */
export class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];

  private write(level: string, message: unknown, params: unknown[]): void {
    this.lines.push(JSON.stringify({ level, message, params }));
    if (process.env.TEST_LOGS) process.stdout.write(`${this.lines[this.lines.length - 1]}\n`);
  }

  log(message: unknown, ...params: unknown[]) {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]) {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    this.write('verbose', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }

  text(): string {
    return this.lines.join('\n');
  }
}
