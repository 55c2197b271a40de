import { writeFileSync } from 'node:fs';
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

if (require.main === module) {
  consoleApiTypes()
    .then((text) => {
      writeFileSync(CONSOLE_API_TYPES_FILE, text);
      console.log(`wrote ${CONSOLE_API_TYPES_FILE}`);
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
