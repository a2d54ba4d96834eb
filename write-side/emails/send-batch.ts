import type { SendEmailInput } from '../../domain/emails/request.ts';
import { type AuthContext, metaOf } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import { comparePositions, type Position } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { acceptEmail } from './accept-email.ts';
import { BatchFailed, BatchQuota } from './batch-quota.ts';
import type { Accepted } from './email-draft.ts';
import { requestDraft } from './request-draft.ts';

export type BatchItem = Accepted | { error: AppError };

/**
 * `POST /v1/emails/batch`: each item is accepted on its own (`acceptEmail`): a bad item gets its error, the others
 * go; in a `strict` batch a bad item refuses the whole batch, and nothing goes. Nothing is appended before every
 * item has passed or failed its checks; those that passed share one grant of the quota (`BatchQuota`). `chosen`:
 * the ids an Idempotency-Key chose in advance.
 */
export async function sendBatch(
  services: Services,
  auth: AuthContext,
  inputs: (SendEmailInput | AppError)[],
  o: { chosen?: { ids: string[]; resumed: boolean }; strict?: boolean } = {},
): Promise<{ items: BatchItem[]; position?: Position }> {
  const { chosen } = o;
  // One time for the whole batch: its emails' `created_at` and the month of its one quota grant.
  const at = services.clock.now();
  const quota = new BatchQuota(services, auth, inputs.length, at, {
    request: chosen?.ids[0],
    strict: o.strict,
  });
  const items = await Promise.all(
    inputs.map(async (input, i): Promise<BatchItem> => {
      if (input instanceof AppError) {
        quota.arrive(i, 'skip', undefined, input);
        return { error: input };
      }
      const emailId = chosen?.ids[i] ?? newId('em', services.clock.now().getTime());
      let paid = false;
      const take = async () => {
        await quota.take(i);
        paid = true;
      };
      try {
        const draft = requestDraft(auth, input, { emailId, resumed: Boolean(chosen?.resumed), at }, take);
        const accepted = await acceptEmail(services, metaOf(auth), draft);
        quota.arrive(i, 'done');
        return accepted;
      } catch (error) {
        if (error instanceof BatchFailed) throw error.reason;
        if (error instanceof AppError) {
          quota.arrive(i, 'skip', undefined, error);
          return { error };
        }
        quota.arrive(i, 'skip', error);
        if (!paid) throw error;
        // Others may already be accepted: a failure here is this item's answer, not the whole batch's 500.
        services.log.error({ err: error }, 'batch item failed');
        return { error: new AppError('internal_error', 'This email could not be accepted; send it again.') };
      }
    }),
  );
  // Every item refused: no taker heard of the strict batch's refusal.
  if (quota.refusal) throw quota.refusal;
  const positions = items.flatMap((i) => ('position' in i && i.position ? [i.position] : []));
  return { items, position: positions.sort(comparePositions).at(-1) };
}
