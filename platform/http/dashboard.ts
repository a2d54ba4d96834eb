import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';

/**
 * The dashboard's page: scripts, styles, fonts and API calls from this origin only. Two relaxations, both for the
 * preview of an email's HTML, which is an `<iframe srcdoc sandbox>` (no scripts, no same origin) and so inherits
 * this policy: inline styles (emails are styled inline) and images from anywhere (remote images stay blocked in the
 * preview by a stricter policy the dashboard writes into the frame, until the user asks for them).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https: http:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** First path segments that belong to the service, never to the dashboard's client-side routes. */
const RESERVED = new Set([
  'v1',
  't',
  'blobs',
  'healthz',
  'readyz',
  'metrics',
  'unsubscribe',
  'admin',
  'assets',
  'docs',
]);

function securityHeaders(res: Response) {
  res.set({
    'Content-Security-Policy': DASHBOARD_CSP,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  });
}

/**
 * Serves the built dashboard (`dir`, the Vite output with `index.html` and hashed `assets/`): the assets as
 * static files, and `index.html` for `/` and any other GET that asks for HTML whose first segment is not the
 * service's own (the client routes `/emails/em_…` etc.). Everything else falls through to the JSON 404.
 * Returns false, mounting nothing, when the bundle is missing.
 */
export function mountDashboard(app: express.Express, dir: string): boolean {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) return false;
  app.use(
    '/assets',
    express.static(join(dir, 'assets'), {
      index: false,
      redirect: false,
      fallthrough: true,
      immutable: true,
      maxAge: '365d',
      setHeaders: securityHeaders,
    }),
  );
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const first = req.path.split('/')[1] ?? '';
    if (RESERVED.has(first)) return next();
    if (req.accepts(['json', 'html']) !== 'html') return next();
    securityHeaders(res);
    res.set('Cache-Control', 'no-cache');
    res.sendFile(index, (error) => {
      if (error && !res.headersSent) next(error);
    });
  });
  return true;
}
