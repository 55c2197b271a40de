import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The console is served by the service itself under /console (src/console/console-static.ts),
// with a CSP that allows no inline script or style: everything goes into hashed files.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    target: 'es2022',
  },
  // `npx vite --config console/vite.config.mts`: hot reload against a service on :3000.
  server: { proxy: { '/admin': 'http://localhost:3000' } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  test: { include: ['test/**/*.test.ts'], environment: 'node' },
});
