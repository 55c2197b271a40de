import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

/**
 * An embedded PostgreSQL in a process of its own, for a test that needs a server
 * and data directory of its own (jest's VM cannot load the ESM package). Prints
 * `{"url": ...}` once ready; stops the server (and removes the directory) when its
 * stdin closes, i.e. when the test ends it or dies.
 */
async function main(): Promise<void> {
  const [dir, database] = process.argv.slice(2);
  const pg = await startEmbeddedPostgres({ dir, database, persistent: false });
  process.stdout.write(`${JSON.stringify({ url: pg.url })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void pg.stop().then(() => process.exit(0)));
}

main().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
