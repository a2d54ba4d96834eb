import { rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { findDomainById } from '../../read-side/domains/queries.ts';
import { recordOutcomes, startSending, systemMeta } from '../../write-side/emails/commands.ts';
import { type DeliveryOutcome, type EmailState, emailDecider } from '../../write-side/emails/decider.ts';
import { type EmailContent, type EmailEvent, emailStream } from '../../write-side/emails/events.ts';
import { suppressForEmail } from '../../write-side/suppressions/commands.ts';
import { DueWork, LogConsumer } from '../log-consumer.ts';
import type { BackgroundProcess } from '../process.ts';
import { DeliveryJobs, enqueueDelivery, type Job } from './delivery-jobs.ts';
import { OutboundMta, type RecipientOutcome } from './mta/outbound.ts';
import { buildOutboundMessage, messageIdOf, type SendingDomain, sendingDomain } from './outbound-message.ts';
import { nextAttemptAt } from './retry-schedule.ts';

export { deliveryMigrations } from './delivery-jobs.ts';

const BATCH = 100;

type Known = Extract<EmailState, { exists: true }>;
type DomainCache = Map<string, Promise<SendingDomain | null>>;

/**
 * Delivery: every live email is a job in `delivery_jobs` (fed from the log by a checkpointed consumer), claimed
 * with FOR UPDATE SKIP LOCKED and a lease so several processes share the work. The email's stream is the truth
 * about who still needs an attempt: a job only says "look at this email at this time". A run sends to the
 * recipients that are due, records each outcome as an event, suppresses hard bounces, and moves the job to the
 * next retry or removes it. A crash replays at most the attempt in flight (at-least-once): recipients whose
 * outcome is recorded are never sent to again.
 */
export class DeliveryProcess implements BackgroundProcess {
  readonly name = 'delivery';
  readonly #services: Services;
  readonly #consumer: LogConsumer;
  readonly #mta: OutboundMta;
  readonly #concurrency: number;
  readonly #due: DueWork;

  constructor(services: Services, options: { mta?: OutboundMta; concurrency?: number } = {}) {
    this.#services = services;
    const c = services.config;
    this.#mta =
      options.mta ??
      new OutboundMta({
        dnsServers: c.DNS_SERVERS,
        port: c.OUTBOUND_SMTP_PORT,
        smarthostUrl: c.SMARTHOST_URL,
        log: services.log,
        ...(!c.OUTBOUND_TLS_REJECT_UNAUTHORIZED && { tls: { rejectUnauthorized: false } }),
      });
    this.#concurrency = options.concurrency ?? 50;
    this.#consumer = new LogConsumer({ name: 'delivery', ...services }, enqueue);
    this.#due = new DueWork({
      consumer: this.#consumer,
      work: () => this.#runAll(),
      intervalMs: 1000,
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
      const jobs = await this.#claim();
      if (jobs.length === 0) return done;
      // One look-up per sending domain and claimed batch (many emails share a domain).
      const domains: DomainCache = new Map();
      let next = 0;
      const worker = async () => {
        while (next < jobs.length) {
          const job = jobs[next++];
          try {
            await this.#deliver(job, domains);
            done++;
          } catch (err) {
            // The claim runs out and another run tries again; the stream keeps what was already recorded.
            this.#services.log.error({ err, emailId: job.email_id }, 'delivery run failed');
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.#concurrency, jobs.length) }, worker));
    }
  }

  async #claim(): Promise<Job[]> {
    const now = this.#services.clock.now();
    const { rows } = await this.#services.db.query<Job>(
      `UPDATE delivery_jobs SET claimed_until = $2
       WHERE email_id IN (
         SELECT email_id FROM delivery_jobs
         WHERE due_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
         ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING email_id, org_id, mode`,
      [now, new Date(now.getTime() + CLAIM_MS), BATCH],
    );
    return rows;
  }

  async #deliver(job: Job, domains: DomainCache) {
    const meta = systemMeta({ orgId: job.org_id, mode: job.mode });
    const history = await this.#services.store.readStream(emailStream(job.email_id));
    const accepted = history.find((e) => e.type === 'EmailQueued' || e.type === 'EmailScheduled');
    let state = rebuildState(emailDecider, history);
    if (!accepted || !state.exists || ['canceled', 'scheduled'].includes(state.lifecycle))
      return this.#finish(job, null);
    if (state.lifecycle === 'queued') {
      const started = await startSending(this.#services, meta, job.email_id, [...history]);
      state = started.state;
      // The history as it now stands, so recording the outcomes need not read the stream again.
      const first = started.revision - started.events.length + 1;
      history.push(
        ...started.events.map((e, i) => ({ ...e, revision: first + i }) as unknown as StoredEvent),
      );
    }
    const s = state as Known;
    const now = this.#services.clock.now();
    const due = Object.entries(s.recipients)
      .filter(
        ([, r]) =>
          r.status === 'pending' ||
          (r.status === 'delayed' && (!r.nextAttemptAt || Date.parse(r.nextAttemptAt) <= now.getTime())),
      )
      .map(([address]) => address);
    if (due.length > 0) {
      const content = accepted.data as EmailContent;
      const outcomes = await this.#attempt(meta, content, due, domains);
      const result = await recordOutcomes(
        this.#services,
        meta,
        job.email_id,
        messageIdOf(content),
        this.#toDecider(s, outcomes, now),
        history,
      );
      await this.#suppressHardBounces(meta, job.email_id, [...history, ...result.events]);
      return this.#finish(job, result.state as Known);
    }
    await this.#suppressHardBounces(meta, job.email_id, history);
    return this.#finish(job, s);
  }

  /** Sends to `recipients`; a domain that is gone or a key that no longer opens defers them like a 4xx would. */
  async #attempt(
    meta: EventMetadata,
    content: EmailContent,
    recipients: string[],
    domains: DomainCache,
  ): Promise<RecipientOutcome[]> {
    const id = content.domainId;
    if (id && !domains.has(id)) domains.set(id, findDomainById(this.#services.db, meta.orgId, meta.mode, id));
    const domain = id ? await domains.get(id)! : null;
    if (!domain) {
      return recipients.map((recipient) => ({
        recipient,
        result: 'deferred' as const,
        smtpResponse: `local: sending domain ${content.domainName} is no longer available`,
      }));
    }
    const message = await buildOutboundMessage(this.#services, content, domain);
    return this.#mta.send(message, recipients);
  }

  #toDecider(s: Known, outcomes: RecipientOutcome[], now: Date): DeliveryOutcome[] {
    return outcomes.map((o) => {
      const recipient = o.recipient.toLowerCase();
      const attempt = (s.recipients[recipient]?.attempts ?? 0) + 1;
      const base = {
        recipient,
        attempt,
        smtpResponse: o.smtpResponse,
        ...(o.smtpCode !== undefined && { smtpCode: o.smtpCode }),
      };
      if (o.result === 'delivered')
        return {
          ...base,
          result: 'delivered',
          ...(o.mx && { mx: o.mx }),
          ...(o.tls !== undefined && { tls: o.tls }),
        };
      if (o.result === 'bounced') return { ...base, result: 'bounced', bounceType: 'hard' };
      const next = nextAttemptAt(attempt, now);
      return next
        ? { ...base, result: 'delayed', nextAttemptAt: next.toISOString() }
        : {
            ...base,
            result: 'bounced',
            bounceType: 'soft',
            smtpResponse: `gave up after ${attempt} attempts: ${o.smtpResponse}`,
          };
    });
  }

  /**
   * Suppresses the email's hard-bounced recipients: this run's, and those a run that crashed after recording them
   * never suppressed (the job outlived it, so the email comes back here). An address whose suppression already
   * came from this email is left alone, so one the customer has lifted since stays lifted.
   */
  async #suppressHardBounces(
    meta: EventMetadata,
    emailId: string,
    events: { type: string; data: unknown }[],
  ) {
    for (const e of events as EmailEvent[]) {
      if (e.type !== 'EmailBounced' || e.data.bounceType !== 'hard') continue;
      await suppressForEmail(this.#services, meta, {
        email: e.data.recipient,
        reason: 'hard_bounce',
        sourceEmailId: emailId,
      });
    }
  }

  /** Next look at the email when a recipient waits for a retry; otherwise the job is done. */
  async #finish(job: Job, state: Known | null) {
    const waiting = state
      ? Object.values(state.recipients).filter((r) => r.status === 'delayed' && r.nextAttemptAt)
      : [];
    if (waiting.length === 0) {
      await this.#services.db.query('DELETE FROM delivery_jobs WHERE email_id = $1', [job.email_id]);
      return;
    }
    const next = waiting.map((r) => r.nextAttemptAt!).sort()[0];
    await this.#services.db.query(
      'UPDATE delivery_jobs SET due_at = $2, claimed_until = NULL WHERE email_id = $1',
      [job.email_id, next],
    );
  }

  async stop(): Promise<void> {
    await this.#due.stop();
    await this.#mta.close();
  }
}
