import { z } from 'zod';
import { AcceptedEmail, BatchResult, Email } from '../../domain/emails/emails.response.ts';
import { EMAIL_LIMITS } from '../../domain/emails/limits.ts';
import { sendEmailInput, updateEmailInput } from '../../domain/emails/request.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError, type ErrorCode, invalidField } from '../../platform/errors.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { type ApiRouter, ok, waitAfterCommit } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { acceptEmail, EMAIL_PROJECTIONS } from './accept-email.ts';
import { cancelEmail, rescheduleEmail } from './email.commands.ts';
import type { Accepted } from './email-draft.ts';
import { checkSendAt } from './email-limits.ts';
import { oneEmail } from './quota.commands.ts';
import { readableEmail } from './readable-email.ts';
import { requestDraft } from './request-draft.ts';
import { sendBatch } from './send-batch.ts';

/** The errors a send may answer beyond every route's (the acceptance pipeline, accept-email.ts). */
const SEND_ERRORS: ErrorCode[] = [
  'domain_not_verified',
  'domain_not_allowed',
  'all_recipients_suppressed',
  'all_recipients_unsubscribed',
  'monthly_quota_exceeded',
  'template_not_published',
  'template_render_error',
  'not_found',
  'conflict',
];

const acceptedBody = (a: Accepted) => ({
  id: a.id,
  status: a.status,
  ...(a.sendAt && { send_at: a.sendAt }),
  suppressed_recipients: a.suppressedRecipients,
  ...(a.unsubscribedRecipients && { unsubscribed_recipients: a.unsubscribedRecipients }),
});

const batchBody = z
  .array(z.unknown(), { message: 'must be an array of emails' })
  .min(1, 'must have at least one email')
  .max(EMAIL_LIMITS.batch, `must have at most ${EMAIL_LIMITS.batch} emails`);

/** The batch as the document shows it: what `batchBody` checks, each item what `sendEmailInput` parses. */
const batchRequest = z.array(sendEmailInput).min(1).max(EMAIL_LIMITS.batch);

/**
 * Resend's `x-batch-validation`: `strict` (what Resend's SDK sends unless told otherwise) refuses the whole batch
 * for a bad item; `permissive`, and Postline without the header, accepts each item on its own.
 */
function batchValidation(header: string | undefined): 'strict' | 'permissive' {
  const value = header?.trim().toLowerCase() ?? 'permissive';
  if (value !== 'strict' && value !== 'permissive')
    throw invalidField('x-batch-validation', 'must be `strict` or `permissive`');
  return value;
}

/** The items of a batch body, as far as it is one: each gets an id in advance under an Idempotency-Key. */
const batchItems = (body: unknown): unknown[] =>
  Array.isArray(body) ? body.slice(0, EMAIL_LIMITS.batch) : [];

export function emailCommandRoutes(api: ApiRouter, services: Services) {
  api.post(
    '/emails',
    async (req) => {
      const input = parse(sendEmailInput, req.body);
      const chosen = req.idempotency;
      const emailId = chosen?.ids[0] ?? newId('em', services.clock.now().getTime());
      const quota = oneEmail(services, req.auth, chosen?.ids[0]);
      const draft = requestDraft(req.auth, input, { emailId, resumed: Boolean(chosen?.resumed) }, quota);
      const accepted = await acceptEmail(services, metaOf(req.auth), draft);
      await readableEmail(services, accepted);
      return ok(acceptedBody(accepted));
    },
    {
      schema: {
        tag: 'Emails',
        summary: 'Send an email',
        description:
          'Accepted once durable; the answer says whether it is queued or scheduled and which recipients were suppressed.',
        body: sendEmailInput,
        responses: { 200: AcceptedEmail },
        errors: SEND_ERRORS,
      },
      access: 'send',
      idempotent: { newIds: (_, at) => [newId('em', at)] },
    },
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
      const inputs = check.data.map((item, i) => {
        try {
          // An error about the whole item names it by its index (`body[2]`), not the batch's body.
          return parse(sendEmailInput, item, `body[${i}]`);
        } catch (error) {
          if (error instanceof AppError) return error;
          throw error;
        }
      });
      const { items, position } = await sendBatch(services, req.auth, inputs, {
        chosen: req.idempotency,
        strict: batchValidation(req.header('x-batch-validation')) === 'strict',
      });
      const data = items.map((i) => ('error' in i ? i.error.toJSON() : acceptedBody(i)));
      // A batch waits for the read model (readable-email.ts says why).
      await waitAfterCommit(services, EMAIL_PROJECTIONS, position, { data });
      return ok({ data });
    },
    {
      schema: {
        tag: 'Emails',
        summary: 'Send up to 100 emails',
        description:
          'Each item is accepted or refused on its own; the answer lists them in order. With `x-batch-validation: strict` (Resend’s SDK sends it), one refused item refuses the whole batch and none is sent.',
        header: z.object({
          'x-batch-validation': z.enum(['strict', 'permissive']).optional().meta({
            description:
              'Resend’s name: `strict` refuses the whole batch for a bad item; default `permissive`.',
          }),
        }),
        body: batchRequest,
        responses: { 200: BatchResult },
        errors: ['invalid_batch', ...SEND_ERRORS],
      },
      access: 'send',
      idempotent: { newIds: (body, at) => batchItems(body).map(() => newId('em', at)) },
      rateLimit: services.config.RATE_LIMIT_BATCH_RPS,
    },
  );

  const emails = commandRoutes(api, services, {
    tag: 'Emails',
    name: 'Email',
    param: 'email_id',
    projections: EMAIL_PROJECTIONS,
    read: (tenant, id) => services.lookUps.getEmail(services.db, tenant, id),
    response: Email,
  });

  emails.change(
    'PATCH',
    '/emails/:email_id',
    {
      summary: 'Reschedule a scheduled email',
      body: updateEmailInput,
      errors: ['email_not_scheduled', 'conflict'],
    },
    (req, id) => {
      const sendAt = checkSendAt(parse(updateEmailInput, req.body).send_at, services.clock.now());
      return rescheduleEmail(services, req.auth, id, sendAt!);
    },
  );

  emails.change(
    'POST',
    '/emails/:email_id/cancel',
    { summary: 'Cancel a scheduled email', errors: ['email_not_scheduled', 'conflict'] },
    (req, id) => cancelEmail(services, req.auth, id),
  );
}
