import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The built-in presets are files, not code: config/senders/<name>.json, each a
 * sender's `settings`. Found beside the working directory's config/ (as the
 * endpoints file is) or the source tree's, so tests and the image read the same files.
 */
export function presetsDirectory(): string | undefined {
  const candidates = [resolve('config/senders'), join(__dirname, '../../../config/senders'), join(__dirname, '../../../../config/senders')];
  return candidates.find((dir) => existsSync(dir));
}

/** The preset's settings, or why it cannot be used. */
export function loadPreset(name: string): { settings?: Record<string, unknown>; problem?: string } {
  if (!/^[a-z0-9-]{1,50}$/.test(name))
    return { problem: `settings.preset: "${name}" is not a preset name (lower-case letters, digits, "-")` };
  const dir = presetsDirectory();
  const file = dir && join(dir, `${name}.json`);
  if (!file || !existsSync(file)) return { problem: `settings.preset: no preset "${name}" in config/senders/` };
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return { problem: `settings.preset: ${name}.json is not an object` };
    return { settings: value as Record<string, unknown> };
  } catch {
    return { problem: `settings.preset: ${name}.json is not valid JSON` };
  }
}

/** The endpoint's settings over its preset's: each top-level key of the endpoint replaces the preset's. */
export function withPreset(settings: Record<string, unknown>): { settings: Record<string, unknown>; problem?: string } {
  if (typeof settings.preset !== 'string') return { settings };
  const { settings: preset, problem } = loadPreset(settings.preset);
  if (!preset) return { settings, problem };
  return { settings: { ...preset, ...settings } };
}
