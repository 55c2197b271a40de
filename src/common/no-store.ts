import type { NextFunction, Request, Response } from 'express';

/** For answers no browser or proxy cache may keep (payloads, personal data). */
export function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  next();
}
