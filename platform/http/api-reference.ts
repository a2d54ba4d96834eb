import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type express from 'express';
import type { RequestHandler } from 'express';
import { API_TITLE } from './openapi.ts';

/** Scalar's standalone bundle, from the npm package: the page loads nothing from another host (no CDN, no fonts). */
const bundlePath = fileURLToPath(
  new URL('browser/standalone.js', import.meta.resolve('@scalar/api-reference')),
);

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${API_TITLE} reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="/docs/standalone.js"></script>
    <script>
      Scalar.createApiReference('#app', {
        url: '/v1/openapi.json',
        withDefaultFonts: false,
        hideClientButton: true,
        telemetry: false,
        // Nothing that talks to Scalar's cloud: no AI agent, no MCP generator.
        agent: { disabled: true },
        mcp: { disabled: true },
      });
    </script>
  </body>
</html>
`;

/**
 * `GET /v1/openapi.json` (the document, no key needed) and `GET /docs` (a reference page rendering it). Mounted
 * before the /v1 router, whose every route needs a key. The document is made and serialised once, when first
 * asked for: made at start-up, its garbage kept the process's heap (and `npm start`'s resident memory) larger for
 * good. Being open to anyone, they count against `limit`: the per-address limit of requests without a key.
 */
export function mountApiReference(app: express.Express, document: () => object, limit: RequestHandler): void {
  let json: string | undefined;
  app.use(['/v1/openapi.json', '/docs'], limit);
  app.get('/v1/openapi.json', (_req, res) => {
    json ??= JSON.stringify(document());
    res.type('application/json').send(json);
  });
  app.get('/docs', (_req, res) => {
    res.type('html').send(page);
  });
  let bundle: Buffer | undefined;
  app.get('/docs/standalone.js', (_req, res) => {
    bundle ??= readFileSync(bundlePath);
    res.type('text/javascript').set('Cache-Control', 'public, max-age=3600').send(bundle);
  });
}
