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
import { DeliveryJobs, enqueueDeliveries, type Job } from './delivery-jobs.ts';
import { OutboundMta, type RecipientOutcome } from './mta/outbound.ts';
import { buildOutboundMessage, messageIdOf, type SendingDomain, sendingDomain } from './outbound-message.ts';
import { RecentlyQueued } from './recently-queued.ts';
import { nextAttemptAt } from './retry-schedule.ts';

export { deliveryMigrations } from './delivery-jobs.ts';

const BATCH = 100;

type Known = Extract<EmailState, { exists: true }>;
type DomainCache = Map<string, Promise<SendingDomain | null>>;

/**
 * Delivery: every live email is a job in `delivery_jobs` (fed from the log by a checkpointed consumer), claimed
 * in batches with a lease so several processes share the work (delivery-jobs.ts). The email's stream is the truth
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
  readonly #jobs: DeliveryJobs;
  readonly #recent = new RecentlyQueued();

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
    this.#jobs = new DeliveryJobs(services);
    this.#consumer = new LogConsumer({ name: 'delivery', ...services }, async (tx, events) => {
      for (const event of await enqueueDeliveries(tx, events)) this.#recent.add(event);
    });
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

  /**
   * Works off the due jobs with `concurrency` workers. The next batch is claimed while the current one still
   * keeps the workers busy, so none waits for a claim, and what became of each job is written in batches.
   */
  async #runAll(): Promise<number> {
    let done = 0;
    const queue: { job: Job; domains: DomainCache }[] = [];
    let exhausted = false;
    let failure: unknown;
    let claiming: Promise<void> | undefined;
    const refill = () => {
      claiming ??= this.#jobs
        .claim(BATCH)
        .then((jobs) => {
          // Until a claim finds nothing: jobs the log adds during the run are this run's too.
          if (jobs.length === 0) exhausted = true;
          // One look-up per sending domain and claimed batch (many emails share a domain).
          const domains: DomainCache = new Map();
          for (const job of jobs) queue.push({ job, domains });
        })
        .catch((err) => {
          // Thrown once the workers have finished what they hold.
          exhausted = true;
          failure = err;
        })
        .finally(() => {
          claiming = undefined;
        });
    };
    const next = async () => {
      for (;;) {
        if (!exhausted && queue.length <= this.#concurrency) refill();
        const item = queue.shift();
        if (item || (exhausted && !claiming)) return item;
        await claiming;
      }
    };
    const worker = async () => {
      for (let item = await next(); item; item = await next()) {
        try {
          this.#jobs.finish(item.job.email_id, await this.#deliver(item.job, item.domains));
          done++;
        } catch (err) {
          // The claim runs out and another run tries again; the stream keeps what was already recorded.
          this.#services.log.error({ err, emailId: item.job.email_id }, 'delivery run failed');
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: this.#concurrency }, worker));
    } finally {
      await this.#jobs.flush();
    }
    if (failure) throw failure;
    return done;
  }

  /** Looks at the email, sends to the recipients that are due; returns when to look again (null: never). */
  async #deliver(
    job: Job,
    domains: DomainCache,
    queued: StoredEvent | null = this.#recent.take(job.email_id) ?? null,
  ): Promise<string | null> {
    const meta = systemMeta({ orgId: job.org_id, mode: job.mode });
    const history = queued ? [queued] : await this.#services.store.readStream(emailStream(job.email_id));
    const accepted = history.find((e) => e.type === 'EmailQueued' || e.type === 'EmailScheduled');
    let state = rebuildState(emailDecider, history);
    if (!accepted || !state.exists || ['canceled', 'scheduled'].includes(state.lifecycle)) return null;
    if (state.lifecycle === 'queued') {
      const started = await startSending(this.#services, meta, job.email_id, [...history]);
      // The stream had moved on from the event the log gave us (another process got there first): start over
      // from the whole stream.
      if (queued && started.revision !== queued.revision + started.events.length)
        return this.#deliver(job, domains, null);
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
      return nextLook(result.state as Known);
    }
    await this.#suppressHardBounces(meta, job.email_id, history);
    return nextLook(s);
  }

  /** Sends to `recipients`; a domain that is gone or a key that no longer opens defers them like a 4xx would. */
  async #attempt(
    meta: EventMetadata,
    content: EmailContent,
    recipients: string[],
    domains: DomainCache,
  ): Promise<RecipientOutcome[]> {
    const id = content.domainId;
    if (id && !domains.has(id)) {
      const { db, secrets } = this.#services;
      domains.set(
        id,
        findDomainById(db, meta.orgId, meta.mode, id).then((row) => row && sendingDomain(row, secrets)),
      );
    }
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

  async stop(): Promise<void> {
    await this.#due.stop();
    await this.#mta.close();
  }
}

/** The earliest retry of a recipient that waits for one; null when none does (the job is done). */
function nextLook(state: Known): string | null {
  const waiting = Object.values(state.recipients)
    .filter((r) => r.status === 'delayed' && r.nextAttemptAt)
    .map((r) => r.nextAttemptAt!);
  return waiting.length === 0 ? null : waiting.sort()[0];
}
