import { setTimeout as sleep } from 'node:timers/promises';
import type { Position } from '../../platform/eventstore/types.ts';
import { waitAfterCommit } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { EMAIL_PROJECTIONS } from './accept-email.ts';
import type { Accepted } from './email-draft.ts';

/**
 * How long a send waits for the `emails` read model before it writes its emails' rows itself. The read model
 * applies the log in order, so behind a broadcast's thousands of emails a password reset would wait for all of
 * them; an idle one takes a few milliseconds, and waiting that long spares the statement.
 */
const WRITE_AHEAD_AFTER_MS = 50;

/**
 * Read-your-writes for sends: resolves once `GET /v1/emails/{id}` and the lists show the accepted emails. That is
 * when the `emails` read model has reached `position`, or, past WRITE_AHEAD_AFTER_MS, once the send has written
 * their rows itself (the projection's own `writeAhead`: when the projection gets there it finds them in, and
 * counts them in the month's usage once). Emails an earlier attempt appended are waited for, and so is everything
 * when the write fails, as any write's answer waits (503 `projection_timeout`, carrying `committed`, past
 * PROJECTION_WAIT_MS).
 */
export async function emailsReadable(
  services: Pick<Services, 'readYourWrites' | 'log'>,
  accepted: Accepted[],
  position: Position | undefined,
  committed: Record<string, unknown>,
): Promise<void> {
  const projected = services.readYourWrites.waitFor(EMAIL_PROJECTIONS, position).then(
    () => true,
    () => false,
  );
  const readable = await Promise.race([projected, sleep(WRITE_AHEAD_AFTER_MS, false)]);
  if (readable) return;
  const recorded = accepted.flatMap((a) => (a.recorded ? [a.recorded] : []));
  if (recorded.length > 0 && recorded.length === accepted.length) {
    try {
      if (await services.readYourWrites.writeAhead(EMAIL_PROJECTIONS, recorded)) return;
    } catch (err) {
      services.log.warn({ err }, 'emails not written ahead of their read model; waiting for it');
    }
  }
  await waitAfterCommit(services, EMAIL_PROJECTIONS, position, committed);
}
