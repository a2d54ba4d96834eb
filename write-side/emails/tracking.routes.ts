import type express from 'express';
import type { TrackingTokens } from '../../domain/emails/tracking.ts';
import { AppError } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import { recordEngagement, systemMeta } from './email.commands.ts';

/** A transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * The tracking endpoints, outside /v1 and without an API key: GET /t/o/<token>.gif (open pixel) and
 * GET /t/c/<token> (click: records, then redirects to the link the token was signed for). A token that does
 * not verify gets the pixel anyway (a broken image helps nobody) or a 404 for a click: never a redirect.
 */
export function mountTracking(app: express.Express, services: Services): void {
  const tokens = services.tokens.tracking;
  const record = async (
    req: express.Request,
    claim: NonNullable<ReturnType<TrackingTokens['verify']>>,
    link?: string,
  ) => {
    try {
      await recordEngagement(services, systemMeta(claim), {
        type: link ? 'RecordClick' : 'RecordOpen',
        emailId: claim.emailId,
        // Kept (sealed) only when the organization asks for it: see recordEngagement.
        client: { ip: req.ip ?? '', userAgent: (req.get('user-agent') ?? '').slice(0, 500) },
        ...(link && { link }),
      });
    } catch (err) {
      services.log.warn({ err, emailId: claim.emailId }, 'tracking event not recorded');
    }
  };

  app.get('/t/o/:token', async (req, res) => {
    const claim = tokens.verify(req.params.token.replace(/\.gif$/, ''));
    if (claim && !claim.url) await record(req, claim);
    res.set({ 'Content-Type': 'image/gif', 'Cache-Control': 'no-store, private' }).send(PIXEL);
  });

  app.get('/t/c/:token', async (req, res) => {
    const claim = tokens.verify(req.params.token);
    if (!claim?.url || !/^https?:\/\//i.test(claim.url))
      throw new AppError('not_found', 'Unknown tracking link.');
    await record(req, claim, claim.url);
    res.redirect(302, claim.url);
  });
}
