import { classOfBounce, classOfDelay } from '../domain/emails/bounce-classes.ts';
import type { EmailEvent } from '../domain/emails/email.events.ts';
import { deliveredSmtpCode } from '../domain/emails/public-event-types.ts';
import { type Lifecycle, type RecipientStatus, rollUp } from '../domain/emails/status.ts';
import { literal, type Transaction } from '../platform/db/database.ts';
import type { Stored } from '../platform/eventstore/types.ts';

/** What an event after EmailQueued/EmailScheduled changes on the email's rows; `null` for other events. */
export interface EmailChange {
  emailId: string;
  lifecycle?: Lifecycle;
  sendAt?: string;
  messageId?: string;
  opens?: number;
  clicks?: number;
  /** Fields of the recipient's entry in `emails.recipients` to set, and when. */
  recipient?: { address: string; at: string; fields: Record<string, unknown> };
}

export function changeOf(e: Stored<EmailEvent>): EmailChange | null {
  const d = e.data;
  const on = (address: string, at: string, fields: Record<string, unknown>) => ({
    emailId: d.emailId,
    recipient: { address, at, fields },
  });
  switch (e.type) {
    case 'EmailRescheduled':
      return { emailId: d.emailId, sendAt: e.data.sendAt };
    case 'EmailCanceled':
      return { emailId: d.emailId, lifecycle: 'canceled' };
    case 'EmailReleased':
      return { emailId: d.emailId, lifecycle: 'queued' };
    case 'EmailSendingStarted':
      return { emailId: d.emailId, lifecycle: 'sending' };
    case 'EmailSent':
      return { emailId: d.emailId, lifecycle: 'sent', messageId: e.data.messageId };
    case 'EmailDelivered':
      // The attempt that delivered is the one after the last that failed (EmailDeliveryDelayed's `attempt`).
      return on(e.data.recipient, e.data.deliveredAt, {
        status: 'delivered',
        smtp_code: deliveredSmtpCode(e.data.smtpResponse),
        smtp_response: e.data.smtpResponse,
        classification: null,
        next_attempt_at: null,
        [ATTEMPTS_ADDED]: 1,
      });
    case 'EmailDeliveryDelayed':
      return on(e.data.recipient, e.data.delayedAt, {
        status: 'delayed',
        attempts: e.data.attempt,
        smtp_code: e.data.smtpCode ?? null,
        smtp_response: e.data.smtpResponse,
        classification: classOfDelay(e.data),
        next_attempt_at: e.data.nextAttemptAt,
      });
    case 'EmailBounced':
      return on(e.data.recipient, e.data.bouncedAt, {
        status: 'bounced',
        bounce_type: e.data.bounceType,
        classification: classOfBounce(e.data),
        smtp_code: e.data.smtpCode,
        smtp_response: e.data.smtpResponse,
        next_attempt_at: null,
      });
    case 'EmailComplained':
      return on(e.data.recipient, e.data.complainedAt, { status: 'complained' });
    case 'EmailOpened':
      return { emailId: d.emailId, opens: 1 };
    case 'EmailClicked':
      return { emailId: d.emailId, clicks: 1 };
    default:
      return null;
  }
}

/** A recipient as the `emails.recipients` column holds it (the API's field names) before any outcome. */
export const pendingRecipient = (address: string, at: string) => ({
  email: address,
  status: 'pending',
  attempts: 0,
  smtp_code: null,
  smtp_response: null,
  bounce_type: null,
  classification: null,
  next_attempt_at: null,
  updated_at: at,
});

/**
 * A field of a recipient's patch that is no column of its entry: add this many to its `attempts` (the count it
 * has when the patch is laid over it), where `attempts` itself sets the count.
 */
const ATTEMPTS_ADDED = 'attempts_added';

/** A recipient's new fields, with the time of the change: what `mergeRecipients` lays over its entry. */
const patchOf = (r: NonNullable<EmailChange['recipient']>) => ({ ...r.fields, updated_at: r.at });

/** `patch` laid over `earlier`, both patches of one recipient, in log order: counts added, values replaced. */
function laidOver(earlier: Record<string, unknown> = {}, patch: Record<string, unknown>) {
  const merged: Record<string, unknown> = { ...earlier, ...patch };
  const added = patch[ATTEMPTS_ADDED] as number | undefined;
  // A count that is set replaces any addition before it.
  if (patch.attempts !== undefined) delete merged[ATTEMPTS_ADDED];
  else if (added !== undefined && typeof earlier.attempts === 'number') {
    merged.attempts = earlier.attempts + added;
    delete merged[ATTEMPTS_ADDED];
  } else if (added !== undefined) merged[ATTEMPTS_ADDED] = ((earlier[ATTEMPTS_ADDED] as number) ?? 0) + added;
  return merged;
}

/**
 * The `recipients` column with each entry overlaid by `patch -> address` (a jsonb object by address, or null),
 * its `attempts_added` added to the entry's `attempts`.
 */
const mergeRecipients = (column: string, patch: string) => `CASE WHEN ${patch} IS NULL THEN ${column} ELSE (
  SELECT coalesce(jsonb_agg(CASE WHEN pp.p ? '${ATTEMPTS_ADDED}'
    THEN ((r.el || pp.p) - '${ATTEMPTS_ADDED}') || jsonb_build_object('attempts',
      coalesce((r.el->>'attempts')::int, 0) + (pp.p->>'${ATTEMPTS_ADDED}')::int)
    ELSE r.el || pp.p END ORDER BY r.i), '[]')
  FROM jsonb_array_elements(${column}) WITH ORDINALITY AS r(el, i),
    LATERAL (SELECT coalesce(${patch} -> (r.el->>'email'), '{}'::jsonb) AS p) AS pp) END`;

const statusesOf = (column: string) =>
  `(SELECT array_agg(r->>'status') FROM jsonb_array_elements(${column}) AS r)`;

/**
 * Applies one change, statement by statement: the reference for `applyChanges` (which must give the same rows)
 * and the path of a lone event.
 */
export async function applyChange(tx: Transaction, event: Stored<EmailEvent>, c: EmailChange) {
  const patch = c.recipient ? { [c.recipient.address]: patchOf(c.recipient) } : null;
  const { rows } = await tx.query<{ lifecycle: Lifecycle; statuses: RecipientStatus[] | null }>(
    `UPDATE emails SET lifecycle = coalesce($2, lifecycle), last_event = $3, last_event_at = $4,
       send_at = coalesce($5, send_at), message_id = coalesce($6, message_id), opens = opens + $7,
       clicks = clicks + $8, recipients = ${mergeRecipients('recipients', '$9::jsonb')}
     WHERE id = $1
     RETURNING lifecycle, ${statusesOf('recipients')} AS statuses`,
    [
      c.emailId,
      c.lifecycle ?? null,
      event.type,
      event.createdAt,
      c.sendAt ?? null,
      c.messageId ?? null,
      c.opens ?? 0,
      c.clicks ?? 0,
      patch && JSON.stringify(patch),
    ],
  );
  if (!rows[0]) return;
  const status = rollUp(rows[0].lifecycle, rows[0].statuses ?? []);
  await tx.query('UPDATE emails SET status = $2 WHERE id = $1 AND status <> $2', [c.emailId, status]);
}

const SET_EMAILS = `
UPDATE emails e SET lifecycle = coalesce(x.lifecycle, e.lifecycle), last_event = x.last_event,
  last_event_at = x.last_event_at, send_at = coalesce(x.send_at, e.send_at),
  message_id = coalesce(x.message_id, e.message_id), opens = e.opens + x.opens, clicks = e.clicks + x.clicks,
  recipients = ${mergeRecipients('e.recipients', '(x.recipients::jsonb)')}
FROM json_to_recordset($1::json) AS x(id text, lifecycle text, last_event text, last_event_at timestamptz,
  send_at timestamptz, message_id text, opens integer, clicks integer, recipients text)
WHERE e.id = ANY($2::text[]) AND e.id = x.id
RETURNING e.id, e.lifecycle, e.status, ${statusesOf('e.recipients')} AS statuses`;

/** Without parameters: the last statement of a batch, it goes with the COMMIT (one round trip fewer). */
const setStatuses = (moved: { id: string; status: string }[]) => `
UPDATE emails e SET status = x.status FROM json_to_recordset(${literal(JSON.stringify(moved))}::json) AS x(id text, status text)
WHERE e.id = ANY(ARRAY[${moved.map((m) => literal(m.id)).join(',')}]::text[]) AND e.id = x.id`;

type EmailRow = Record<string, unknown> & {
  opens: number;
  clicks: number;
  recipients?: Record<string, Record<string, unknown>>;
};

/**
 * Applies many changes in two statements, whatever their number, the second with the COMMIT (so nothing after it
 * in the transaction reads `status`): the changes are merged per email and per
 * recipient in order first (the last value of a field wins, counters add up), and the status follows from the
 * final lifecycle and recipients, as it does event by event. The emails' ids also go as an array: PostgreSQL
 * guesses 100 rows for the JSON's records and would hash a whole (young) `emails` table to join them, where it
 * estimates `id = ANY(ids)` right and probes the primary key. Delivery outcomes arrive by the hundred, and one
 * long transaction holds back every reader of the log (DESIGN.md §3), so this keeps it short.
 */
export async function applyChanges(tx: Transaction, events: Stored<EmailEvent>[]) {
  const emails = new Map<string, EmailRow>();
  for (const event of events) {
    const c = changeOf(event);
    if (!c) continue;
    const row = emails.get(c.emailId) ?? { id: c.emailId, opens: 0, clicks: 0 };
    Object.assign(row, {
      last_event: event.type,
      last_event_at: event.createdAt,
      ...(c.lifecycle && { lifecycle: c.lifecycle }),
      ...(c.sendAt && { send_at: c.sendAt }),
      ...(c.messageId && { message_id: c.messageId }),
    });
    row.opens += c.opens ?? 0;
    row.clicks += c.clicks ?? 0;
    if (c.recipient) {
      row.recipients ??= {};
      row.recipients[c.recipient.address] = laidOver(
        row.recipients[c.recipient.address],
        patchOf(c.recipient),
      );
    }
    emails.set(c.emailId, row);
  }
  if (emails.size === 0) return;
  const { rows } = await tx.query<{
    id: string;
    lifecycle: Lifecycle;
    status: string;
    statuses: RecipientStatus[] | null;
  }>(SET_EMAILS, [
    // The recipients' patches as JSON text (docs/architecture.md, "JSON rows into PostgreSQL").
    JSON.stringify(
      [...emails.values()].map((r) => ({ ...r, recipients: r.recipients && JSON.stringify(r.recipients) })),
    ),
    [...emails.keys()],
  ]);
  const moved = rows
    .map((r) => ({ id: r.id, status: rollUp(r.lifecycle, r.statuses ?? []), was: r.status }))
    .filter((r) => r.status !== r.was);
  if (moved.length > 0) tx.atCommit(setStatuses(moved));
}
