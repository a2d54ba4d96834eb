import { readableAfterCommit } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { EMAIL_PROJECTIONS } from './accept-email.ts';
import type { Accepted } from './email-draft.ts';

/**
 * How long a send waits for the `emails` read model before it writes its email's row itself. The read model
 * applies the log in order, so behind a broadcast's thousands of emails a password reset would wait for all of
 * them; an idle one takes a few milliseconds, and waiting that long spares the statement.
 */
const WRITE_AHEAD_AFTER_MS = 50;

/**
 * Read-your-writes for a single send: resolves once `GET /v1/emails/{id}` and the lists show the email. That is
 * when the `emails` read model has reached its position, or, past WRITE_AHEAD_AFTER_MS, once the send has written
 * its row itself (the projection's own `writeAhead`: when the projection gets there it finds it in, and counts it
 * in the month's usage once). An email an earlier attempt appended is waited for, and so is one whose write
 * fails, as any write's answer waits (503 `projection_timeout` past PROJECTION_WAIT_MS). A batch waits: writing
 * its rows ahead cost a tenth more CPU an email (bench:send) where its own work takes most of its time.
 */
export async function readableEmail(
  services: Pick<Services, 'readYourWrites' | 'log'>,
  accepted: Accepted,
): Promise<void> {
  const { position, recorded } = accepted;
  // One wait for the read model, whose deadline counts from the send: raced against the write-ahead's delay, then
  // (when the write-ahead could not be made) answered from.
  const waiting = services.readYourWrites.waitFor(EMAIL_PROJECTIONS, position);
  const projected = waiting.then(
    () => true,
    () => false,
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, WRITE_AHEAD_AFTER_MS, false);
  });
  const readable = await Promise.race([projected, late]);
  clearTimeout(timer); // a send answered in time leaves no timer behind
  if (readable) return;
  if (recorded) {
    try {
      if (await services.readYourWrites.writeAhead(EMAIL_PROJECTIONS, [recorded])) return;
    } catch (err) {
      services.log.warn({ err }, 'email not written ahead of its read model; waiting for it');
    }
  }
  await readableAfterCommit(services, waiting, { id: accepted.id });
}
