import { attemptEndsAfter } from '../../domain/emails/delivery-attempts.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { mapLimited } from '../../platform/map-limited.ts';
import type { Services } from '../../platform/services.ts';
import { unfinishedEmailsOf } from '../../read-side/broadcasts/broadcasts.queries.ts';
import { EMAIL_PROJECTIONS } from '../../write-side/emails/accept-email.ts';
import { withdrawEmail } from '../../write-side/emails/email.commands.ts';

/** Emails read from the `emails` read model at a time. */
const PAGE = 1000;
/** Withdrawals in flight at once: their appends share the store's group commits. */
const AT_ONCE = 100;

/**
 * A stopped broadcast's emails that nobody received and nobody is sending to are canceled (`WithdrawEmail`): those
 * the MTA has not started on, and those waiting for a retry; one with an attempt in flight goes on. Run once no step
 * of the broadcast writes emails any more (the step that saw the stop waited for its pages' writes): every email of
 * the broadcast is in the log, and the `emails` read model is waited for up to its head. A read model that does not
 * get there in time throws, and the withdrawal runs again. Answers when the last attempt it left in flight ends
 * (null: none was): the step withdraws once more then, for an email that attempt left deferred.
 */
export async function withdrawBroadcast(
  services: Services,
  meta: EventMetadata,
  broadcastId: string,
): Promise<Date | null> {
  const head = await services.store.headPosition({ committed: true });
  await services.readYourWrites.waitFor(EMAIL_PROJECTIONS, head);
  let [after, inFlightUntil] = ['', null as Date | null];
  for (;;) {
    const ids = await unfinishedEmailsOf(services.db, broadcastId, after, PAGE);
    const results = await mapLimited(ids, AT_ONCE, (id) => withdrawEmail(services, meta, id));
    const now = services.clock.now().getTime();
    for (const r of results) {
      const ends = attemptEndsAfter(r.state, now);
      if (ends && (!inFlightUntil || ends > inFlightUntil)) inFlightUntil = ends;
    }
    if (ids.length < PAGE) return inFlightUntil;
    after = ids.at(-1)!;
  }
}
