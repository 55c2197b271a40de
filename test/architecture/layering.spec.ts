import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The module floors, lowest first. A module may import its own files and the
 * modules on lower floors, never one on its own floor or above: the tree then
 * reads bottom-up and no change to a low module can loop back through a high one.
 */
const FLOORS: string[][] = [
  ['common'],
  ['config'],
  ['tracing'],
  ['database', 'observability', 'crypto'],
  ['audit', 'provider-api'],
  ['inbox', 'outbox'],
  ['orders', 'ingestion'],
  ['reconciliation'],
  ['providers'],
  ['retention'],
  ['timeline', 'activity'],
  ['admin', 'monitoring', 'console'],
  ['cli', 'app'],
];

const SRC = resolve(__dirname, '../../src');
const floors = new Map(FLOORS.flatMap((mods, floor) => mods.map((m) => [m, floor] as const)));
/**
 * A module this list does not name (a team's own, e.g. src/subscriptions/) sits with the
 * built-in providers: above every product module it may use, below the admin API and the
 * app. Adding one touches no line here.
 */
const EXTENSION_FLOOR = floors.get('providers')!;
const floorOf = (module: string): number => floors.get(module) ?? EXTENSION_FLOOR;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** `inbox` for src/inbox/x.ts; `app` for the files directly in src/. */
function moduleOf(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts.length === 1 ? 'app' : parts[0];
}

/** Relative imports of a file inside src/, resolved to file paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/^(?:import|export)[^'"]*from '(\.[^']+)'/gm)].map((m) => m[1]);
  return specs
    .map((s) => resolve(dirname(file), s))
    .map((p) => (p.endsWith('.ts') ? p : `${p}.ts`))
    .filter((p) => p.startsWith(SRC + '/'));
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('module layering', () => {
  it('places a module it does not name on the extension floor: above the product modules, below admin and app', () => {
    expect(floorOf('subscriptions')).toBeGreaterThan(floorOf('reconciliation'));
    expect(floorOf('subscriptions')).toBeLessThan(floorOf('admin'));
  });

  it('imports only from lower floors', () => {
    const upward: string[] = [];
    for (const [file, imports] of graph) {
      const from = moduleOf(file);
      for (const target of imports) {
        const to = moduleOf(target);
        if (to !== from && floorOf(to) >= floorOf(from)) upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('has no import cycle between files', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('leaves every transaction to the module that owns the use case: admin/ opens none, no method takes one half-done (*InTx)', () => {
    const text = (file: string) => readFileSync(file, 'utf8');
    const adminTransactions = files.filter((f) => moduleOf(f) === 'admin' && /\btransaction\w*\(|\bDataSource\b/.test(text(f)));
    expect(adminTransactions.map((f) => relative(SRC, f))).toEqual([]);
    const inTx = files.flatMap((f) => [...text(f).matchAll(/\b\w+InTx\b/g)].map((m) => `${relative(SRC, f)}: ${m[0]}`));
    expect(inTx).toEqual([]);
  });

  it('keeps common/ free of the product', () => {
    const outside = files
      .filter((f) => moduleOf(f) === 'common')
      .flatMap((f) =>
        graph
          .get(f)!
          .filter((t) => moduleOf(t) !== 'common')
          .map((t) => `${relative(SRC, f)} -> ${relative(SRC, t)}`),
      );
    expect(outside).toEqual([]);
  });
});
