import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AuthVerdict } from '../../domain/received-emails/received-email.events.ts';
import { ReceivedEmail } from '../../domain/received-emails/received-emails.response.ts';
import { AppError } from '../../platform/errors.ts';
import { type ApiRouter, created } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import { receiveMessage } from './received-email.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const RECEIVED_EMAIL_PROJECTIONS = ['received_emails'];

const address = z.string().trim().max(254).pipe(z.email('must be a valid email address'));

const injectBody = z
  .object({
    raw: z
      .string({ error: (i) => (i.input === undefined ? 'is required: the whole MIME message' : undefined) })
      .min(1, 'must not be empty'),
    mail_from: address.optional(),
    to: z.array(address).min(1).max(100).optional(),
  })
  .strict();

const injected: AuthVerdict = { result: 'none', detail: 'injected through the API in test mode' };

/**
 * Test mode's stand-in for the MX (docs/receiving.md): a raw MIME message recorded as if it had arrived, so a
 * user's `email.received` handler can be exercised without DNS. Live keys are refused.
 */
export function receivedEmailCommandRoutes(api: ApiRouter, services: Services) {
  api.post(
    '/emails/received',
    async (req) => {
      if (req.auth.mode !== 'test')
        throw new AppError(
          'test_mode_only',
          'Only test keys (pk_test_…) may inject received emails; live mail arrives through the MX.',
        );
      const body = parse(injectBody, req.body);
      const raw = Buffer.from(body.raw.replace(/\r?\n/g, '\r\n'), 'utf8');
      const staged = await services.blobs.stage(raw, services.clock.now().getTime());
      const { ids, position } = await receiveMessage(
        services,
        {
          rawKey: staged.key,
          rows: Promise.resolve(staged.row ? [staged.row] : []),
          size: raw.length,
          read: () => Readable.from([raw]),
          mailFrom: body.mail_from ?? '',
          retryable: false,
          remoteAddress: null,
          helo: null,
          checks: Promise.resolve({
            authentication: { spf: injected, dkim: injected, dmarc: injected, arc: injected },
          }),
        },
        [{ orgId: req.auth.orgId, mode: 'test', domainId: null, domain: null, recipients: body.to ?? [] }],
        req.auth.keyId,
      );
      await services.readYourWrites.waitFor(RECEIVED_EMAIL_PROJECTIONS, position);
      return created(await services.lookUps.receivedEmailAnswer(services, req.auth, ids[0]));
    },
    {
      schema: {
        tag: 'Received emails',
        summary: 'Inject a received email (test keys only)',
        body: injectBody,
        responses: { 201: ReceivedEmail },
        errors: ['test_mode_only'],
      },
    },
  );
}
