import { expect } from 'vitest';
import type { ApiClient, TestService } from './service.ts';

/** An email's events, as its stream holds them. */
export const emailHistory = (svc: TestService, id: string) =>
  svc.postline.services.store.readStream(`email-${id}`);

/** The types of an email's events, in order. */
export const emailEventTypes = async (svc: TestService, id: string) =>
  (await emailHistory(svc, id)).map((e) => e.type);

/** GET /v1/emails/{id} once the read model has the email's last event (read-your-writes, not the whole log). */
export async function readEmail(svc: TestService, client: ApiClient, id: string) {
  const last = (await emailHistory(svc, id)).at(-1);
  await svc.postline.services.readYourWrites.waitFor(['emails'], last?.position);
  return (await client.get(`/v1/emails/${id}`)).body;
}

/**
 * An email whose one recipient was delayed once, then delivered, as the API shows it: live or simulated, the same
 * status, a recipient with nothing of the earlier 4xx left, and the same history.
 */
export async function expectDeliveredAfterOneDelay(svc: TestService, email: any) {
  expect(email.status).toBe('delivered');
  // The second attempt delivered, and its 250 stands beside its answer.
  expect(email.recipients[0]).toMatchObject({
    status: 'delivered',
    attempts: 2,
    smtp_code: 250,
    next_attempt_at: null,
  });
  // Attempt records are the MTA's own (docs/mta.md): the simulator sends nothing, so it makes none.
  const types = await emailEventTypes(svc, email.id);
  expect(types.filter((t) => t !== 'EmailDeliveryAttemptStarted')).toEqual([
    'EmailQueued',
    'EmailSendingStarted',
    'EmailSent',
    'EmailDeliveryDelayed',
    'EmailDelivered',
  ]);
}
