import type { Transaction } from '../../platform/db/database.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import {
  recordComplaint,
  recordOutcomes,
  startSending,
  systemMeta,
} from '../../write-side/emails/commands.ts';
import { type EmailState, recipientsOf } from '../../write-side/emails/decider.ts';
import { type EmailContent, type EmailEvent, emailStream } from '../../write-side/emails/events.ts';
import { suppressForEmail } from '../../write-side/suppressions/commands.ts';
import { messageIdOf } from '../delivery/outbound-message.ts';
import { DueWork, eachEvent, LogConsumer } from '../log-consumer.ts';
import type { BackgroundProcess } from '../process.ts';
import { type SimulatedStep, simulatedOutcome } from './simulator-plan.ts';

export const simulatorMigrations: Migration[] = [
  {
    id: 'simulator-001',
    sql: `CREATE TABLE IF NOT EXISTS simulator_steps (
  email_id text NOT NULL,
  recipient text NOT NULL,
  seq integer NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  due_at timestamptz NOT NULL,
  step jsonb NOT NULL,
  claimed_until timestamptz,
  PRIMARY KEY (email_id, recipient, seq)
);
CREATE INDEX IF NOT EXISTS simulator_steps_due ON simulator_steps (due_at)`,
  },
];

const CLAIM_MS = 60_000;
const BATCH = 200;
/** The step that "sends" the email; recipients' steps are planned from it. */
const SEND = { recipient: '', seq: 0 };

async function enqueue(tx: Transaction, event: StoredEvent) {
  if (event.metadata.mode !== 'test') return;
  const e = event as unknown as EmailEvent;
  const dueAt =
    e.type === 'EmailQueued' ? e.data.createdAt : e.type === 'EmailReleased' ? e.data.releasedAt : null;
  if (!dueAt) return;
  await tx.query(
    `INSERT INTO simulator_steps (email_id, recipient, seq, org_id, mode, due_at, step) VALUES ($1, $2, $3, $4, 'test', $5, '{}')
     ON CONFLICT DO NOTHING`,
    [e.data.emailId, SEND.recipient, SEND.seq, event.metadata.orgId, dueAt],
  );
}

interface StepRow {
  email_id: string;
  recipient: string;
  seq: number;
  org_id: string;
  mode: 'test';
  due_at: Date;
  step: SimulatedStep;
}

/**
 * Test mode's stand-in for delivery: `pk_test_` emails never reach the MTA. It produces the outcomes a real
 * send would, through the same commands and events (so webhooks look exactly like live ones), timed from the
 * moment of sending (simulator-plan.ts). Steps live in a due table claimed with FOR UPDATE SKIP LOCKED.
 */
export class SimulatorProcess implements BackgroundProcess {
  readonly name = 'simulator';
  readonly #services: Services;
  readonly #consumer: LogConsumer;
  readonly #due: DueWork;

  constructor(services: Services) {
    this.#services = services;
    this.#consumer = new LogConsumer({ name: 'simulator', ...services }, eachEvent(enqueue));
    this.#due = new DueWork({
      consumer: this.#consumer,
      work: () => this.#runAll(),
      intervalMs: 250,
      log: services.log,
    });
  }

  start(): void {
    this.#due.start();
  }

  /** Catches up with the log, then works off everything due now. Returns how many items were done. */
  runOnce(): Promise<number> {
    return this.#due.runOnce();
  }

  async #runAll(): Promise<number> {
    let done = 0;
    while (true) {
      const rows = await this.#claim();
      if (rows.length === 0) return done;
      // Recipients run in parallel; one recipient's steps in order (delayed before delivered).
      const byRecipient = Map.groupBy(rows, (r) => `${r.email_id} ${r.recipient}`);
      await Promise.all(
        [...byRecipient.values()].map(async (steps) => {
          for (const row of steps.sort((a, b) => a.seq - b.seq)) {
            try {
              await this.#play(row);
            } catch (err) {
              this.#services.log.error(
                { err, emailId: row.email_id },
                'simulated step failed; retried after its claim expires',
              );
              return;
            }
            await this.#services.db.query(
              'DELETE FROM simulator_steps WHERE email_id = $1 AND recipient = $2 AND seq = $3',
              [row.email_id, row.recipient, row.seq],
            );
            done++;
          }
        }),
      );
    }
  }

  async #claim(): Promise<StepRow[]> {
    const now = this.#services.clock.now();
    const { rows } = await this.#services.db.query<StepRow>(
      `UPDATE simulator_steps SET claimed_until = $2
       WHERE (email_id, recipient, seq) IN (
         SELECT email_id, recipient, seq FROM simulator_steps
         WHERE due_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
         ORDER BY due_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [now, new Date(now.getTime() + CLAIM_MS), BATCH],
    );
    return rows;
  }

  async #play(row: StepRow) {
    const meta = systemMeta({ orgId: row.org_id, mode: row.mode });
    if (row.recipient === SEND.recipient) return this.#send(meta, row);
    const content = await this.#content(row.email_id);
    if (!content) return;
    // The same Message-ID as a live send (the decider writes it into EmailSent if this step records it first).
    const messageId = messageIdOf(content);
    const s = row.step;
    const attempt = 'attempt' in s && s.attempt ? s.attempt : 1;
    switch (s.kind) {
      case 'delivered':
        await recordOutcomes(this.#services, meta, row.email_id, messageId, [
          {
            recipient: row.recipient,
            result: 'delivered',
            attempt,
            smtpResponse: '250 2.0.0 OK: queued (simulated)',
          },
        ]);
        return;
      case 'delayed': {
        const nextAttemptAt = new Date(this.#services.clock.now().getTime() + s.retryAfterMs).toISOString();
        await recordOutcomes(this.#services, meta, row.email_id, messageId, [
          {
            recipient: row.recipient,
            result: 'delayed',
            attempt,
            smtpCode: s.smtpCode,
            smtpResponse: s.smtpResponse,
            nextAttemptAt,
          },
        ]);
        return;
      }
      case 'bounced': {
        const r = await recordOutcomes(this.#services, meta, row.email_id, messageId, [
          {
            recipient: row.recipient,
            result: 'bounced',
            bounceType: 'hard',
            attempt,
            smtpCode: s.smtpCode,
            smtpResponse: s.smtpResponse,
          },
        ]);
        // Also when the bounce was recorded before a crash (nothing new now): the suppression is added once.
        if (recipientStatus(r.state, row.recipient) === 'bounced') {
          await suppressForEmail(this.#services, meta, {
            email: row.recipient,
            reason: 'hard_bounce',
            sourceEmailId: row.email_id,
          });
        }
        return;
      }
      case 'complained': {
        const r = await recordComplaint(this.#services, meta, row.email_id, row.recipient);
        if (recipientStatus(r.state, row.recipient) === 'complained') {
          await suppressForEmail(this.#services, meta, {
            email: row.recipient,
            reason: 'complaint',
            sourceEmailId: row.email_id,
          });
        }
        return;
      }
    }
  }

  /** "Sends": sending started and sent, then plans each recipient's outcome from now. */
  async #send(meta: EventMetadata, row: StepRow) {
    const content = await this.#content(row.email_id);
    if (!content) return;
    const started = await startSending(this.#services, meta, row.email_id);
    // Canceled (or never released): nothing to send. `sent` means a crash after sending: plan the steps again.
    if (
      !started.state.exists ||
      (started.state.lifecycle !== 'sending' && started.state.lifecycle !== 'sent')
    )
      return;
    await recordOutcomes(this.#services, meta, row.email_id, messageIdOf(content), []);
    const now = this.#services.clock.now().getTime();
    const values: unknown[] = [];
    const tuples: string[] = [];
    for (const recipient of recipientsOf(content)) {
      simulatedOutcome(recipient).forEach((step, i) => {
        const n = values.length;
        tuples.push(`($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, 'test', $${n + 5}, $${n + 6})`);
        values.push(
          row.email_id,
          recipient,
          i + 1,
          row.org_id,
          new Date(now + step.afterMs),
          JSON.stringify(step),
        );
      });
    }
    await this.#services.db.query(
      `INSERT INTO simulator_steps (email_id, recipient, seq, org_id, mode, due_at, step) VALUES ${tuples.join(', ')} ON CONFLICT DO NOTHING`,
      values,
    );
  }

  /** The email as accepted (queued or scheduled), or null when its stream holds none. */
  async #content(emailId: string): Promise<EmailContent | null> {
    const history = await this.#services.store.readStream(emailStream(emailId));
    const accepted = history.find((e) => e.type === 'EmailQueued' || e.type === 'EmailScheduled');
    return accepted ? (accepted.data as EmailContent) : null;
  }

  async stop(): Promise<void> {
    await this.#due.stop();
  }
}

const recipientStatus = (state: EmailState, recipient: string) =>
  state.exists ? state.recipients[recipient.toLowerCase()]?.status : undefined;
