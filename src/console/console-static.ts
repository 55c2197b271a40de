import express, { NextFunction, Request, Response, Router } from 'express';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The operator console's policy: its own files only, no inline script or style,
 * never framed. The console talks to the admin API on the same origin.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Where `npm run build` puts the console (vite's outDir): dist/console at the package root. */
export function consoleDir(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
  return join(dir, 'dist', 'console');
}

/**
 * Serves the built console under /console: index.html never cached (it names the
 * current hashed files), hashed assets cached for good. Anything else under
 * /console is a JSON 404, like the API's; a service built without the console
 * says so instead of serving a blank page.
 */
export function consoleRouter(dir: string): Router {
  const router = Router();
  router.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    next();
  });
  router.use(
    express.static(dir, {
      index: 'index.html',
      redirect: true,
      dotfiles: 'ignore',
      fallthrough: true,
      setHeaders: (res, path) => {
        res.setHeader('Cache-Control', path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
  router.use((req: Request, res: Response) => {
    const built = existsSync(join(dir, 'index.html'));
    res
      .status(404)
      .json(
        built
          ? { status: 'error', reason: 'not_found', message: 'no such console file' }
          : { status: 'error', reason: 'console_not_built', message: 'this build has no console: run npm run build' },
      );
  });
  return router;
}
