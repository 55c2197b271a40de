import { join } from 'node:path';
import { runTsChild } from '../support/child-process';

const CLI = join(__dirname, '..', '..', 'src', 'cli', 'cli.ts');

/** Arguments the CLI must refuse before it sends anything (no service is running here). */
describe('cli arguments', () => {
  it.each([
    [['bogus'], 2, /Usage:/],
    [[], 2, /Usage:/],
    [['--help'], 0, /Usage:/],
    [['replay', '--dry-run', '--reason', 'count first', '--token', 't'], 2, /replay needs an inbox id or --filter/],
    [['replay', '1', '--token', 't'], 2, /replay needs --reason/],
    [['reconcile', '--dry-run', '--token', 't'], 2, /reconcile needs --reason/],
    [['send', 'stripe-demo', '--amount', 'abc', '--url', 'http://127.0.0.1:9'], 2, /--amount must be a whole number/],
  ])(
    '%j exits %i',
    async (args, code, output) => {
      const result = await runTsChild(CLI, args);
      expect(result.code).toBe(code);
      expect(result.output).toMatch(output);
    },
    30_000,
  );
});
