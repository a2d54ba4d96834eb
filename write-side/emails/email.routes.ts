import { z } from 'zod';
import { AppError, notFound } from '../../platform/errors.ts';
import type { Position } from '../../platform/eventstore/types.ts';
import type { AuthContext } from '../../platform/http/auth-context.ts';
import { type ApiRouter, ok, waitAfterCommit } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { getEmail } from '../../read-side/emails/emails.queries.ts';
import { type Accepted, cancelEmail, rescheduleEmail, sendBatch, sendEmail } from './email.commands.ts';
import { EMAIL_LIMITS } from './limits.ts';
import { sendEmailInput, updateEmailInput } from './request.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const EMAIL_PROJECTIONS = ['emails'];

const acceptedBody = (a: Accepted) => ({
  id: a.id,
  status: a.status,
  ...(a.sendAt && { send_at: a.sendAt }),
  suppressed_recipients: a.suppressedRecipients,
});

const batchBody = z
  .array(z.unknown(), { message: 'must be an array of emails' })
  .min(1, 'must have at least one email')
  .max(EMAIL_LIMITS.batch, `must have at most ${EMAIL_LIMITS.batch} emails`);

/** The items of a batch body, as far as it is one: each gets an id in advance under an Idempotency-Key. */
const batchItems = (body: unknown): unknown[] =>
  Array.isArray(body) ? body.slice(0, EMAIL_LIMITS.batch) : [];

export function emailCommandRoutes(api: ApiRouter, services: Services) {
  api.post(
    '/emails',
    async (req) => {
      const accepted = await sendEmail(services, req.auth, parse(sendEmailInput, req.body), req.idempotency);
      await waitAfterCommit(services, EMAIL_PROJECTIONS, accepted.position, { id: accepted.id });
      return ok(acceptedBody(accepted));
    },
    { access: 'send', idempotent: { newIds: (_, at) => [newId('em', at)] } },
  );

  api.post(
    '/emails/batch',
    async (req) => {
      const check = batchBody.safeParse(req.body);
      if (!check.success)
        throw new AppError(
          'invalid_batch',
          `\`body\`: ${check.error.issues[0].message} (1 to ${EMAIL_LIMITS.batch})`,
        );
      const inputs = check.data.map((item) => {
        try {
          return parse(sendEmailInput, item);
        } catch (error) {
          if (error instanceof AppError) return error;
          throw error;
        }
      });
      const { items, position } = await sendBatch(services, req.auth, inputs, req.idempotency);
      const data = items.map((i) => ('error' in i ? i.error.toJSON() : acceptedBody(i)));
      await waitAfterCommit(services, EMAIL_PROJECTIONS, position, { data });
      return ok({ data });
    },
    {
      access: 'send',
      idempotent: { newIds: (body, at) => batchItems(body).map(() => newId('em', at)) },
      rateLimit: services.config.RATE_LIMIT_BATCH_RPS,
    },
  );

  const reply = async (auth: AuthContext, emailId: string, position: Position | undefined) => {
    await services.readYourWrites.waitFor(EMAIL_PROJECTIONS, position);
    const email = await getEmail(services.db, auth, emailId);
    if (!email) throw notFound('Email', emailId);
    return ok(email);
  };

  api.patch('/emails/:email_id', async (req) => {
    const body = parse(updateEmailInput, req.body);
    const now = services.clock.now().getTime();
    const t = Date.parse(body.send_at);
    if (t <= now) throw new AppError('validation_error', '`send_at`: must be in the future');
    if (t > now + EMAIL_LIMITS.sendAtHorizonDays * 86_400_000) {
      throw new AppError(
        'validation_error',
        `\`send_at\`: must be at most ${EMAIL_LIMITS.sendAtHorizonDays} days ahead`,
      );
    }
    const result = await rescheduleEmail(services, req.auth, req.params.email_id, new Date(t).toISOString());
    return reply(req.auth, req.params.email_id, result.position);
  });

  api.post('/emails/:email_id/cancel', async (req) => {
    const result = await cancelEmail(services, req.auth, req.params.email_id);
    return reply(req.auth, req.params.email_id, result.position);
  });
}
