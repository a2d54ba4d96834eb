import { refusalOf } from '../../domain/emails/bounce-classes.ts';
import {
  acceptedContent,
  type EmailContent,
  emailStream,
  messageIdOf,
  readyToSend,
  recipientsOf,
} from '../../domain/emails/email.events.ts';
import { BoundedMap } from '../../platform/bounded-map.ts';
import type { Transaction } from '../../platform/db/database.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import {
  type DeliveryOutcome,
  recordComplaint,
  recordOutcomes,
  sendAtOnce,
  systemMeta,
} from '../../write-side/emails/email.commands.ts';
import { DueProcess } from '../due-process.ts';
import { recordSimulatedEngagement } from './simulated-engagement.ts';
import { type SimulatedStep, simulatedOutcome } from './simulator-plan.ts';

/** Emails whose streams a simulator keeps between steps (`#known`): beyond that, the least recently used are read again. */
const KNOWN_STREAMS = 1000;

/** The step that "sends" the email; recipients' steps are planned from it. */
const SEND = { recipient: '', seq: 0 };

interface StepRow {
  email_id: string;
  recipient: string;
  seq: number;
  org_id: string;
  mode: 'test';
  step: SimulatedStep;
}

const SIMULATOR_STEPS: DueTable = {
  table: 'simulator_steps',
  key: { email_id: 'text', recipient: 'text', seq: 'integer' },
  dueAt: 'due_at',
  columns: ['org_id', 'mode', 'step'],
  // A claim only keeps two processes from playing a step at once: its commands are idempotent, so a step
  // played again does no harm (an outcome is recorded once per recipient by the decider, an open or a click once
  // per step by the mark its event carries: simulated-engagement.ts). After a crash its steps are played again
  // once the claim has run out.
  leaseMs: 10_000,
};

/**
 * Test mode's stand-in for delivery: `pk_test_` emails never reach the MTA. It produces the outcomes a real
 * send would, through the same commands and events (so webhooks look exactly like live ones), timed from the
 * moment of sending (simulator-plan.ts). Steps live in a due table (DueQueue); a recipient's steps play in order.
 */
export class SimulatorProcess extends DueProcess<StepRow> {
  /**
   * Per recipient, whether its last step so far in this run played. Tasks are taken in claim order, so the step a
   * task waits for is already taken by another worker.
   */
  #played = new Map<string, Promise<boolean>>();

  /**
   * Email streams as far as this process knows them (a test email's first event from the log, then its own send),
   * from one step to the next: a step decides on them without reading, and its command reads the stream only when
   * another writer came in between (its append fails on the revision). A step takes its email's entry.
   */
  readonly #known = new BoundedMap<string, StoredEvent[]>(KNOWN_STREAMS);

  constructor(services: Services) {
    super(services, { name: 'simulator', everyMs: 250, table: SIMULATOR_STEPS, batch: 200, concurrency: 50 });
  }

  /** Test emails accepted (queued, or released by the scheduler) get their send step, due at once. */
  protected dueChange(event: StoredEvent): DueChange | undefined {
    const ready = event.metadata.mode === 'test' ? readyToSend(event) : undefined;
    if (!ready) return undefined;
    const { orgId, mode } = event.metadata;
    return { add: { email_id: ready.emailId, ...SEND, org_id: orgId, mode, due_at: ready.since, step: {} } };
  }

  protected override async consume(tx: Transaction, events: StoredEvent[]): Promise<void> {
    await super.consume(tx, events);
    for (const e of events)
      if (e.revision === 0 && e.metadata.mode === 'test' && readyToSend(e)) this.#known.set(e.streamId, [e]);
  }

  protected override work(): Promise<number> {
    this.#played = new Map();
    return super.work();
  }

  /**
   * Plays the steps claimed; each task resolves with 1 when its step played. A recipient's steps play one after the
   * other (delayed before delivered), also across claims; a step that fails holds back the recipient's later ones,
   * and they are given back together, to be played again after a short back-off.
   */
  protected plan(rows: StepRow[]): Task[] {
    return rows.map((row) => {
      const recipient = `${row.email_id} ${row.recipient}`;
      const before = this.#played.get(recipient) ?? Promise.resolve(true);
      const { promise: mine, resolve } = Promise.withResolvers<boolean>();
      this.#played.set(recipient, mine);
      return async () => {
        const ok = (await before) && (await this.#playOnce(row));
        resolve(ok);
        return ok ? 1 : 0;
      };
    });
  }

  /**
   * Plays the step and finishes its row, with the steps it planned; false when it failed (logged; its row is given
   * back, played again).
   */
  async #playOnce(row: StepRow): Promise<boolean> {
    let planned: Record<string, unknown>[] | undefined;
    try {
      planned = await this.#play(row);
    } catch (err) {
      this.services.log.error(
        { err, emailId: row.email_id },
        'simulated step failed; played again after a back-off',
      );
      return false;
    }
    this.due.finish(row, null, planned);
    return true;
  }

  /**
   * Plays the step on its email's stream as known here (`#known`), or else read once; a decision of nothing on a
   * known stream, which may be behind, is made again on the stream read. A send returns the steps it planned.
   */
  async #play(row: StepRow): Promise<Record<string, unknown>[] | undefined> {
    const stream = emailStream(row.email_id);
    const known = this.#known.get(stream);
    this.#known.delete(stream);
    const played = known && (await this.#playOn(row, known));
    if (played?.appended) return played.planned;
    return (await this.#playOn(row, await this.services.store.readStream(stream))).planned;
  }

  /** Plays the step on `history`: whether its command appended (or read the stream itself), and what it planned. */
  async #playOn(
    row: StepRow,
    history: StoredEvent[],
  ): Promise<{ appended: boolean; planned?: Record<string, unknown>[] }> {
    const meta = systemMeta({ orgId: row.org_id, mode: row.mode });
    const content = acceptedContent(history);
    if (!content) return { appended: false };
    if (row.recipient === SEND.recipient) return this.#send(meta, row, content, history);
    // The same Message-ID as a live send (the decider writes it into EmailSent if this step records it first).
    const messageId = messageIdOf(content);
    const s = row.step;
    switch (s.kind) {
      case 'delivered':
      case 'delayed':
      case 'bounced': {
        const outcome = this.#outcome(row.recipient, s);
        const r = await recordOutcomes(this.services, meta, row.email_id, messageId, [outcome], history);
        return { appended: r.events.length > 0 };
      }
      case 'opened':
      case 'clicked':
        return {
          appended: await recordSimulatedEngagement(
            this.services,
            meta,
            { ...row, step: s },
            content,
            history,
          ),
        };
      case 'complained':
        await recordComplaint(this.services, meta, row.email_id, row.recipient);
        return { appended: true };
    }
  }

  /** What a delivered, delayed or bounced step records, as the MTA would have. */
  #outcome(
    recipient: string,
    s: Extract<SimulatedStep, { kind: 'delivered' | 'delayed' | 'bounced' }>,
  ): DeliveryOutcome {
    const attempt = 'attempt' in s && s.attempt ? s.attempt : 1;
    switch (s.kind) {
      case 'delivered':
        return {
          recipient,
          result: 'delivered',
          attempt,
          smtpResponse: '250 2.0.0 OK: queued (simulated)',
        };
      case 'delayed': {
        const nextAttemptAt = new Date(this.services.clock.now().getTime() + s.retryAfterMs).toISOString();
        const { smtpCode, smtpResponse } = s;
        return { recipient, result: 'delayed', attempt, smtpCode, smtpResponse, nextAttemptAt };
      }
      case 'bounced': {
        const { smtpCode, smtpResponse } = s;
        const refusal = refusalOf(smtpResponse, this.services.policies.bounceRules);
        return { recipient, result: 'bounced', ...refusal, attempt, smtpCode, smtpResponse };
      }
    }
  }

  /**
   * "Sends": sending started and sent, then plans each recipient's outcome from now (written with the send step's
   * finish: a crash before that plays the send again, which finds the email sent and plans them again).
   */
  async #send(meta: EventMetadata, row: StepRow, content: EmailContent, history: StoredEvent[]) {
    const sent = await sendAtOnce(this.services, meta, row.email_id, messageIdOf(content), history);
    const appended = sent.events.length > 0;
    // Canceled (or never released): nothing to send. Already sent (a crash after sending): plan the steps again.
    if (!sent.state.exists || sent.state.lifecycle !== 'sent') return { appended };
    const known = appendedTo(history, sent, meta);
    if (known) this.#known.set(emailStream(row.email_id), known);
    const now = this.services.clock.now().getTime();
    const planned = recipientsOf(content).flatMap((recipient) =>
      simulatedOutcome(recipient).map((step, i) => ({
        email_id: row.email_id,
        recipient,
        seq: i + 1,
        org_id: row.org_id,
        mode: 'test' as const,
        due_at: new Date(now + step.afterMs),
        step,
      })),
    );
    return { appended, planned };
  }
}

/**
 * The history with what a command appended to it, or undefined when the command read the stream again (another
 * writer came in between) or appended nothing. The new events' positions are the last one's: no decision reads them.
 */
function appendedTo(
  history: StoredEvent[],
  r: { events: { type: string; data: unknown }[]; position?: string; revision: number },
  metadata: EventMetadata,
): StoredEvent[] | undefined {
  const last = history.at(-1);
  if (!last || !r.position || r.events.length === 0 || r.revision !== last.revision + r.events.length)
    return undefined;
  const [streamId, position, createdAt] = [last.streamId, r.position, new Date()];
  const added = r.events.map((e, i) => ({
    ...e,
    metadata,
    streamId,
    revision: last.revision + 1 + i,
    position,
    createdAt,
  }));
  return [...history, ...added];
}
