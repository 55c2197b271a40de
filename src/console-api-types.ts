import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { offlineOpenApiDocument } from './openapi';

/** The console's types of the admin API (console/src/api.ts imports them). */
export const CONSOLE_API_TYPES_FILE = resolve(__dirname, '../console/src/api.generated.ts');

export const REGENERATE_COMMAND = 'npm run console:api-types';

const HEADER = `// Generated from the admin API's OpenAPI document by \`${REGENERATE_COMMAND}\`: do not edit.
// A test (src/console-api-types.spec.ts) fails when this file no longer matches the document.

`;

/** The TypeScript that openapi-typescript writes for the document /docs-json serves, built without a database. */
export async function consoleApiTypes(): Promise<string> {
  const document = await offlineOpenApiDocument();
  return HEADER + astToString(await openapiTS(document as never));
}

/** `--check`: exit 1, saying what to run, when the committed file differs from a fresh one; else write it. */
async function main(check: boolean): Promise<void> {
  const fresh = await consoleApiTypes();
  if (!check) {
    writeFileSync(CONSOLE_API_TYPES_FILE, fresh);
    console.log(`wrote ${CONSOLE_API_TYPES_FILE}`);
  } else if (readFileSync(CONSOLE_API_TYPES_FILE, 'utf8') !== fresh) {
    console.error(
      `console/src/api.generated.ts is stale: the admin API's OpenAPI document changed. Run \`${REGENERATE_COMMAND}\` and commit the file.`,
    );
    process.exitCode = 1;
  }
}

if (require.main === module) {
  main(process.argv.includes('--check')).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
