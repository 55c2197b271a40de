import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';

/** `<13-digit timestamp>-<name>.ts` (`.js` once built): one migration class per file. */
const MIGRATION_FILE = /^(\d{13})-[a-z0-9-]+\.(ts|js)$/;

type MigrationClass = new () => MigrationInterface;

/** This folder's own helpers, which are not migrations. */
const HELPERS = new Set(['index', 'concurrent-index']);

/**
 * Every migration, oldest first: the files of this folder and of each module's own
 * `src/<module>/migrations/` folder, found by their names. A module that owns a table
 * adds its migration as a new file there and touches no list. The same files load
 * under ts-jest and ts-node (`.ts`) and from the build (`.js`).
 */
export const MIGRATIONS: MigrationClass[] = [__dirname, ...moduleFolders(join(__dirname, '..', 'src'))]
  .flatMap((folder) => migrationFiles(folder).map((file) => ({ folder, file })))
  .sort((a, b) => a.file.localeCompare(b.file))
  .map(({ folder, file }) => migrationIn(join(folder, file)));

/** The migration files of `folder`; any other code file there is a mistake (a name that would never run), refused. */
function migrationFiles(folder: string): string[] {
  const code = readdirSync(folder).filter((file) => /\.(ts|js)$/.test(file) && !file.endsWith('.d.ts'));
  const stray = code.filter((file) => !MIGRATION_FILE.test(file) && !HELPERS.has(file.replace(/\.(ts|js)$/, '')));
  if (stray.length > 0)
    throw new Error(`${folder}: ${stray.join(', ')}: a migration file is named <13-digit timestamp>-<lower-case-name>.ts`);
  return code.filter((file) => MIGRATION_FILE.test(file));
}

function moduleFolders(src: string): string[] {
  if (!existsSync(src)) return [];
  return readdirSync(src, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(src, entry.name, 'migrations')))
    .map((entry) => join(src, entry.name, 'migrations'));
}

function migrationIn(path: string): MigrationClass {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- found at run time, by name
  const exported = Object.values(require(path) as Record<string, unknown>).filter(
    (value): value is MigrationClass => typeof value === 'function' && typeof (value as MigrationClass).prototype?.up === 'function',
  );
  if (exported.length !== 1) throw new Error(`${path}: a migration file exports exactly one migration class (found ${exported.length})`);
  return exported[0];
}
