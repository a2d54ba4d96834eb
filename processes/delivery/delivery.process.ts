import {
  acceptedContent,
  type EmailContent,
  type EmailEvent,
  emailStream,
  messageIdOf,
  readyToSend,
} from '../../domain/emails/email.events.ts';
import { isFinal } from '../../domain/emails/status.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { CommandResult } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { findDomainById } from '../../read-side/domains/domains.queries.ts';
import {
  attemptable,
  type EmailState,
  readEmail,
  recordOutcomes,
  startDeliveryAttempt,
  startSending,
  systemMeta,
} from '../../write-side/emails/email.commands.ts';
import { DueProcess } from '../due-process.ts';
import { ATTEMPT_LIMIT_MS, ATTEMPT_MARGIN_MS, UnknownOutcomes, writeUntilWritten } from './attempts.ts';
import { DELIVERY_JOBS, type Job } from './delivery-jobs.ts';
import type { RecipientOutcome } from './mta/message.ts';
import { OutboundMta } from './mta/outbound.ts';
import { buildOutboundMessage, type SendingDomain, sendingDomain } from './outbound-message.ts';
import { outcomeOf } from './outcomes.ts';

export { deliveryMigrations } from './delivery-jobs.ts';

type Known = Extract<EmailState, { exists: true }>;
/**
 * An email as a look sees it: its content as accepted, its stream (read once, then with this look's own events)
 * and the state it folds to. Commands are decided on `history` rather than on a fresh read of the stream.
 */
type Email = { id: string; meta: EventMetadata; content: EmailContent; history: StoredEvent[]; state: Known };
/** Sending domains looked up once per claimed batch (many emails share one), by id. */
type DomainCache = Map<string, Promise<SendingDomain | null>>;

/**
 * Delivery: every live email is a job in `delivery_jobs` (fed from the log by the process's consumer), claimed in
 * batches from a DueQueue so several processes share the work. The email's stream is the truth about who still
 * needs an attempt: a job only says "look at this email at this time". Each look runs the steps of `#look`.
 * Every attempt is recorded before it sends and sends nothing after ATTEMPT_LIMIT_MS (attempts.ts); what the remote
 * server answered is written until it is written. Recipients whose outcome is recorded are never sent to again;
 * one whose attempt is in flight is left alone until the attempt's `endsBy`; only an attempt cut short by a crash
 * (no outcome after `endsBy`) is made again, recorded as such (docs/mta.md).
 */
export class DeliveryProcess extends DueProcess<Job> {
  readonly #mta: OutboundMta;
  readonly #unknown: UnknownOutcomes;
  /** When stop() was called (ms since the epoch): outcomes not yet written are given up the grace after. */
  #stoppingSince?: number;

  constructor(services: Services, options: { mta?: OutboundMta; concurrency?: number } = {}) {
    super(services, {
      name: 'delivery',
      everyMs: 1000,
      table: DELIVERY_JOBS,
      batch: 100,
      concurrency: options.concurrency ?? 50,
    });
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
    this.#unknown = new UnknownOutcomes(services.clock);
  }

  /** Live emails accepted (queued, or released by the scheduler) become jobs due at once. */
  protected dueChange(event: StoredEvent): DueChange | undefined {
    const ready = event.metadata.mode === 'live' ? readyToSend(event) : undefined;
    if (!ready) return undefined;
    const { orgId, mode } = event.metadata;
    return { add: { email_id: ready.emailId, org_id: orgId, mode, due_at: ready.since } };
  }

  /** Looks at the emails claimed, sharing their domains' look-ups; a task resolves with 1 when its look succeeded. */
  protected plan(jobs: Job[]): Task[] {
    const domains: DomainCache = new Map();
    return jobs.map((job) => async () => {
      try {
        this.due.finish(job, await this.#look(job, domains));
        return 1;
      } catch (err) {
        // The job is given back and looked at again; the stream keeps what was already recorded.
        this.services.log.error({ err, emailId: job.email_id }, 'delivery run failed');
        return 0;
      }
    });
  }

  /** One look at an email: sends to the recipients that are due; returns when to look again (null: never). */
  async #look(job: Job, domains: DomainCache): Promise<string | null> {
    const email = await this.#readEmail(job);
    if (!email) return null;
    const { due, waitUntil } = this.#dueRecipients(email);
    if (due.length > 0) {
      const domain = await this.#checkDomain(email, domains);
      if (domain) await this.#attempt(email, domain, due);
      else {
        await this.#startSending(email);
        await this.#recordOutcomes(email, this.#deferAll(email, due));
      }
    }
    return this.#nextLook(email.state, waitUntil);
  }

  /** The email from its stream; null when there is nothing to deliver (never accepted, canceled, still scheduled). */
  async #readEmail(job: Job): Promise<Email | null> {
    const { history, state } = await readEmail(this.services, job.email_id);
    const content = acceptedContent(history);
    if (!content || !state.exists || state.lifecycle === 'canceled' || state.lifecycle === 'scheduled')
      return null;
    const meta = systemMeta({ orgId: job.org_id, mode: job.mode });
    return { id: job.email_id, meta, content, history, state };
  }

  /** A queued email becomes `sending` (EmailSendingStarted) before outcomes that no attempt gave (no domain). */
  async #startSending(email: Email): Promise<void> {
    if (email.state.lifecycle !== 'queued') return;
    await this.#took(email, await startSending(this.services, email.meta, email.id, email.history));
  }

  /**
   * Recipients without an outcome yet, and delayed ones whose retry time has come (`attemptable`: none whose
   * attempt is in flight). One whose last attempt ended without an outcome also waits until UNKNOWN_GRACE_MS after
   * this process first saw that attempt (`waitUntil`: when the first of them may go).
   */
  #dueRecipients(email: Email): { due: string[]; waitUntil?: number } {
    const now = this.services.clock.now();
    const retryAt = new Map<string, number>();
    for (const [address, r] of Object.entries(email.state.recipients))
      if (r.inFlight && !isFinal(r.status))
        retryAt.set(address, this.#unknown.retryAt(email.id, r.inFlight.startedAt));
    const { recipients, outcomeUnknown } = attemptable(email.state, now.toISOString());
    let waitUntil: number | undefined;
    const due = recipients.filter((address) => {
      if (!outcomeUnknown.includes(address)) return true;
      const at = retryAt.get(address)!;
      if (at <= now.getTime()) return true;
      waitUntil = Math.min(waitUntil ?? at, at);
      return false;
    });
    return { due, waitUntil };
  }

  /** The sending domain with its DKIM key opened; null when it is gone. */
  #checkDomain(email: Email, domains: DomainCache): Promise<SendingDomain | null> {
    const id = email.content.domainId;
    if (!id) return Promise.resolve(null);
    let domain = domains.get(id);
    if (!domain) {
      const { db, secrets } = this.services;
      const { orgId, mode } = email.meta;
      domain = findDomainById(db, { orgId, mode }, id).then((row) => row && sendingDomain(row, secrets));
      domains.set(id, domain);
    }
    return domain;
  }

  /** Without a sending domain every due recipient is deferred, as a 4xx would: its retry may find it back. */
  #deferAll(email: Email, recipients: string[]): RecipientOutcome[] {
    const smtpResponse = `local: sending domain ${email.content.domainName} is no longer available`;
    return recipients.map((recipient) => ({ recipient, result: 'deferred' as const, smtpResponse }));
  }

  /**
   * Builds the message (tracking, attachments, VERP), records the attempt, and sends it to the recipients the
   * record names (another process may have started an attempt on the others meanwhile): one SMTP transaction per
   * destination, DKIM-signed, nothing of it later than ATTEMPT_LIMIT_MS after the record. Then records what the
   * servers said.
   */
  async #attempt(email: Email, domain: SendingDomain, recipients: string[]): Promise<void> {
    const message = await buildOutboundMessage(this.services, email.content, domain);
    const startedAt = this.services.clock.now().getTime();
    const endsBy = new Date(startedAt + ATTEMPT_LIMIT_MS + ATTEMPT_MARGIN_MS).toISOString();
    const before = email.state.recipients;
    const started = await startDeliveryAttempt(
      this.services,
      email.meta,
      email.id,
      { recipients, endsBy },
      email.history,
    );
    await this.#took(email, started);
    const attempt = started.events.find((e) => e.type === 'EmailDeliveryAttemptStarted');
    if (!attempt) return;
    for (const r of attempt.data.outcomeUnknown ?? []) {
      const earlier = before[r]?.inFlight?.startedAt;
      if (earlier) this.#unknown.forget(email.id, earlier);
    }
    // The limit counts from the record, whatever its append took.
    const withinMs = startedAt + ATTEMPT_LIMIT_MS - this.services.clock.now().getTime();
    await this.#recordOutcomes(email, await this.#mta.send(message, attempt.data.recipients, { withinMs }));
  }

  /**
   * Records each recipient's outcome; a temporary failure gets its retry time, or bounces (soft) after the last.
   * What the servers said is kept until it is written (writeUntilWritten): a database that is away delays the
   * record, it never loses it while the process lives.
   */
  async #recordOutcomes(email: Email, outcomes: RecipientOutcome[]): Promise<void> {
    const now = this.services.clock.now();
    const rules = this.services.policies.bounceRules;
    const decided = outcomes.map((o) => outcomeOf(email.state, o, now, rules));
    const grace = this.services.config.SHUTDOWN_GRACE_MS;
    const result = await writeUntilWritten(
      {
        log: this.services.log,
        emailId: email.id,
        // A little before the grace ends, so that what is lost is logged before the stores close.
        giveUpAt: () => this.#stoppingSince && this.#stoppingSince + grace - Math.min(1000, grace / 10),
        // Addresses stay out of the log (a server's reply may quote one): the outcomes are in the order of the
        // attempt's recipients.
        lost: () => decided.map(({ recipient: _, smtpResponse: __, ...o }) => o),
      },
      () =>
        recordOutcomes(
          this.services,
          email.meta,
          email.id,
          messageIdOf(email.content),
          decided,
          email.history,
        ),
    );
    await this.#took(email, result);
  }

  /**
   * A command's result joins the email: its state, and its events to the history as stored (their revisions follow
   * the stream's; their position is the append's). A command that met a stream another process had moved since
   * (it decided again on a fresh read) has the look read the stream again.
   */
  async #took(email: Email, result: CommandResult<EmailEvent, EmailState>): Promise<void> {
    email.state = result.state as Known;
    const first = result.revision - result.events.length + 1;
    if (first !== (email.history.at(-1)?.revision ?? -1) + 1) {
      email.history = await this.services.store.readStream(emailStream(email.id));
      return;
    }
    if (result.position === undefined) return;
    const stored = { metadata: email.meta, streamId: emailStream(email.id), position: result.position };
    const createdAt = this.services.clock.now();
    email.history.push(...result.events.map((e, i) => ({ ...e, ...stored, revision: first + i, createdAt })));
  }

  /**
   * When to look again: the earliest of a delayed recipient's retry, the end of an attempt in flight, and
   * `waitUntil` (an attempt whose outcome is unknown); null when no recipient waits for anything (the job is done).
   */
  #nextLook(state: Known, waitUntil?: number): string | null {
    const now = this.services.clock.now().getTime();
    const times = waitUntil === undefined ? [] : [waitUntil];
    for (const r of Object.values(state.recipients)) {
      if (isFinal(r.status)) continue;
      // An attempt past its end without an outcome waits for `waitUntil`.
      if (r.inFlight) times.push(Math.max(Date.parse(r.inFlight.endsBy), waitUntil ?? now));
      else if (r.status === 'delayed' && r.nextAttemptAt) times.push(Date.parse(r.nextAttemptAt));
      else times.push(now);
    }
    return times.length === 0 ? null : new Date(Math.min(...times)).toISOString();
  }

  override async stop(): Promise<void> {
    this.#stoppingSince = Date.now();
    try {
      await super.stop();
      await this.#mta.close();
    } finally {
      this.#stoppingSince = undefined;
    }
  }
}
