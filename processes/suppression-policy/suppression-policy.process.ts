import { suppresses } from '../../domain/emails/bounce-classes.ts';
import { EMAIL_EVENT_TYPES, type EmailEvent } from '../../domain/emails/email.events.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { isOneOf, type Mode, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { suppressForEmail } from '../../write-side/suppressions/suppression.commands.ts';
import { DueProcess } from '../due-process.ts';

type Reason = 'hard_bounce' | 'complaint';
type Due = { email_id: string; recipient: string; org_id: string; mode: Mode; actor: string; reason: Reason };

export const SUPPRESSIONS_DUE: DueTable = {
  table: 'suppressions_due',
  key: { email_id: 'text', recipient: 'text' },
  dueAt: 'due_at',
  columns: ['org_id', 'mode', 'actor', 'reason'],
  // Suppressing is idempotent (suppressForEmail): a row played again after a crash does no harm.
  leaseMs: 10_000,
};

/**
 * What puts an address on the suppression list, in one place: a hard bounce whose class says the address is dead
 * (invalid_recipient, bad_domain, inactive_mailbox), or a complaint, of one of the organization's emails, whoever
 * recorded it (delivery, the test-mode simulator, a report that came back to the MX). A hard bounce recorded
 * before classes (no classification) suppresses, as it did then. Which outcome counts is decided here and nowhere
 * else.
 */
export function suppressingOutcome(
  event: EmailEvent,
): { reason: Reason; emailId: string; recipient: string; at: string } | null {
  if (
    event.type === 'EmailBounced' &&
    event.data.bounceType === 'hard' &&
    (event.data.classification === undefined || suppresses(event.data.classification))
  ) {
    const { emailId, recipient, bouncedAt: at } = event.data;
    return { reason: 'hard_bounce', emailId, recipient, at };
  }
  if (event.type === 'EmailComplained') {
    const { emailId, recipient, complainedAt: at } = event.data;
    return { reason: 'complaint', emailId, recipient, at };
  }
  return null;
}

/**
 * Suppression policy: each hard bounce and complaint in the log becomes a row due at once (the first outcome of an
 * (email, recipient) keeps its row), and each row the suppression of that recipient for that email
 * (suppressForEmail: once per email and address, so replays and crashes suppress once, and a suppression the
 * customer lifted stays lifted). The suppression is recorded by the same actor as the outcome.
 */
export class SuppressionPolicyProcess extends DueProcess<Due> {
  constructor(services: Services) {
    super(services, {
      name: 'suppression-policy',
      everyMs: 1000,
      table: SUPPRESSIONS_DUE,
      batch: 100,
      concurrency: 10,
    });
  }

  protected dueChange(e: StoredEvent): DueChange | undefined {
    const outcome = isOneOf<EmailEvent>(e, EMAIL_EVENT_TYPES) ? suppressingOutcome(e) : null;
    if (!outcome) return undefined;
    const { orgId, mode, actor } = e.metadata;
    const { emailId, recipient, reason, at } = outcome;
    return { add: { email_id: emailId, recipient, org_id: orgId, mode, actor, reason, due_at: at } };
  }

  /** Suppresses each claimed recipient; a task resolves with 1 when it did (its row is then done). */
  protected plan(rows: Due[]): Task[] {
    return rows.map((row) => async () => {
      const meta = { orgId: row.org_id, mode: row.mode, actor: row.actor };
      try {
        await suppressForEmail(this.services, meta, {
          email: row.recipient,
          reason: row.reason,
          sourceEmailId: row.email_id,
        });
      } catch (err) {
        // Its row is given back (DueQueue.drain) and tried again.
        this.services.log.error({ err, emailId: row.email_id }, 'suppression not added');
        return 0;
      }
      this.due.finish(row, null);
      return 1;
    });
  }
}
