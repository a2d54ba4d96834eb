import type { ShapingGroup } from '../../domain/delivery/shaping-groups.ts';
import {
  acceptedContent,
  type EmailContent,
  type EmailEvent,
  emailStream,
  messageIdOf,
} from '../../domain/emails/email.events.ts';
import type { Transaction } from '../../platform/db/database.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { CommandResult } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import {
  type DeliveryOutcome,
  type EmailState,
  readEmail,
  recordOutcomes,
  startDeliveryAttempt,
  startSending,
  systemMeta,
} from '../../write-side/emails/email.commands.ts';
import { DueProcess } from '../due-process.ts';
import { ATTEMPT_LIMIT_MS, ATTEMPT_MARGIN_MS, UnknownOutcomes, writeUntilWritten } from './attempts.ts';
import { deliveryJobs, type Job, jobChangesOf, listQueues, splitJob } from './delivery-jobs.ts';
import { DestinationLog } from './destination-log.ts';
import { type DestinationShaping, outbound } from './destination-shaping.ts';
import { type EgressChoice, EgressSources } from './egress/egress-sources.ts';
import { JustQueued } from './just-queued.ts';
import { dueRecipients, nextLook } from './look-times.ts';
import { deferredAll, type RecipientOutcome } from './mta/message.ts';
import type { OutboundMta } from './mta/outbound.ts';
import { buildOutboundMessage, type SendingDomain, SendingDomains } from './outbound-message.ts';
import { givenUp, outcomeOf, unsent } from './outcomes.ts';
import type { ConnectionSlots } from './shaping/connection-slots.ts';

type Known = Extract<EmailState, { exists: true }>;
/** An attempt's plan: its recipients, the group that admitted it and the source it leaves from. */
type Attempt = { recipients: string[]; early: boolean; group: ShapingGroup; egress: EgressChoice };
/**
 * An email as a look sees it: its content as accepted, its stream (read once, then with this look's own events)
 * and the state it folds to. Commands are decided on `history` rather than on a fresh read of the stream.
 */
type Email = {
  id: string;
  meta: EventMetadata;
  content: EmailContent;
  history: StoredEvent[];
  state: Known;
  /** The job's destination: only its recipients are looked at. */
  destination: string;
};

/**
 * Delivery: every live email is a job per destination (its recipients' domains) in `delivery_jobs`, fed from the
 * log by the process's consumer, claimed in batches from a DueQueue so several processes share the work, fairly
 * across organizations and lanes (delivery-jobs.ts). The email's stream is the truth about who still needs an
 * attempt: a job only says "look at this email's recipients there at this time" (the steps of `#look`).
 * Every attempt is recorded before it sends and sends nothing after ATTEMPT_LIMIT_MS (attempts.ts); what the remote
 * server answered is written until it is written. Recipients whose outcome is recorded are never sent to again;
 * one whose attempt is in flight is left alone until the attempt's `endsBy`; only an attempt cut short by a crash
 * (no outcome after `endsBy`) is made again, recorded as such (docs/mta.md).
 */
export class DeliveryProcess extends DueProcess<Job> {
  readonly #mta: OutboundMta;
  readonly #unknown: UnknownOutcomes;
  readonly #destinations: DestinationLog;
  readonly #shaping: DestinationShaping;
  readonly #egress: EgressSources;
  readonly #queued = new JustQueued();
  /** Connections per shaping group, held across every process (unset when a test hands in its own MTA). */
  readonly #slots?: ConnectionSlots;
  /** When stop() was called (ms since the epoch): outcomes not yet written are given up the grace after. */
  #stoppingSince?: number;

  constructor(services: Services, options: { mta?: OutboundMta; concurrency?: number } = {}) {
    super(services, {
      name: 'delivery',
      everyMs: 1000,
      table: deliveryJobs(),
      batch: 100,
      concurrency: options.concurrency ?? 50,
    });
    ({ mta: this.#mta, slots: this.#slots, shaping: this.#shaping } = outbound(services, options.mta));
    this.#unknown = new UnknownOutcomes(services.clock);
    this.#destinations = new DestinationLog(services);
    this.#egress = new EgressSources({ ...services, policy: services.policies.egress });
  }

  /** Live emails accepted become a job per destination, due at once; canceled ones have none (delivery-jobs.ts). */
  protected dueChange(event: StoredEvent): DueChange[] {
    return jobChangesOf(event);
  }

  /** The jobs, and their queues listed for the claim's turns, in the consumer's transaction. */
  protected override async consume(tx: Transaction, events: StoredEvent[]): Promise<void> {
    const perEvent = events.map((e) => this.dueChange(e));
    const jobs = perEvent.map((changes) => changes.flatMap((c) => ('add' in c ? [c.add] : [])));
    this.#queued.note(events.filter((_, i) => jobs[i].length > 0)); // the emails this process may look at
    await this.due.apply(tx, perEvent.flat());
    await listQueues(tx, jobs.flat());
  }

  /** Looks at the jobs claimed, sharing their domains' look-ups; a task resolves with 1 when its look succeeded. */
  protected plan(jobs: Job[]): Task[] {
    const domains = new SendingDomains(this.services);
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

  /**
   * One look at an email's recipients at the job's destination: gives them up (the operator said so), or sends to
   * those that are due once the destination's shaping admits a message; returns when to look again (null: never).
   */
  async #look(job: Job, domains: SendingDomains): Promise<string | null> {
    const email = await this.#readEmail(job);
    if (!email) return null;
    if (job.destination === '') return this.#split(job, email);
    const now = this.services.clock.now();
    const early = job.expedite || job.give_up; // given up: every recipient waiting is due, none is sent
    const { due, waitUntil } = dueRecipients(email, { now, unknown: this.#unknown, early });
    if (job.give_up) await this.#giveUp(email, due);
    else if (due.length > 0) {
      const domain = await domains.of(email.content, email.meta);
      if (domain) {
        // Nothing is recorded for a message held back (no source of its pool with room under its warm-up cap,
        // or the group's shaping): it has not been attempted.
        const group = await this.#shaping.groupOf(email.destination);
        const egress = await this.#egress.admit(job.org_id, job.lane, group, this.#shaping);
        if (typeof egress === 'string') return egress;
        await this.#attempt(email, domain, { recipients: due, early: job.expedite, group, egress });
      } else {
        // Without a sending domain every due recipient is deferred, as a 4xx would (its retry may find it back),
        // and nothing was sent (`unsent`: no EmailSent).
        const smtpResponse = `local: sending domain ${email.content.domainName} is no longer available`;
        await this.#startSending(email);
        await this.#recordOutcomes(email, this.#decide(email, deferredAll(due, smtpResponse)).map(unsent));
      }
    }
    return nextLook(email, this.services.clock.now().getTime(), waitUntil);
  }

  /**
   * The email from its stream; null when there is nothing to deliver (never accepted, canceled, still scheduled).
   * A give-up reads the stream, never the copy noted at acceptance, which misses another process's attempt since.
   */
  async #readEmail(job: Job): Promise<Email | null> {
    const known = this.#queued.take(emailStream(job.email_id));
    const { history, state } = await readEmail(this.services, job.email_id, job.give_up ? undefined : known);
    const content = acceptedContent(history);
    if (!content || !state.exists || state.lifecycle === 'canceled' || state.lifecycle === 'scheduled')
      return null;
    const meta = systemMeta({ orgId: job.org_id, mode: job.mode });
    return { id: job.email_id, meta, content, history, state, destination: job.destination };
  }

  /** A job for every destination (an email released from its schedule) becomes a job per destination. */
  async #split(job: Job, email: Email): Promise<null> {
    const now = this.services.clock.now().toISOString();
    await this.due.add(this.services.db, splitJob(job, email.state.recipients, now));
    this.workAgain();
    return null;
  }

  /**
   * Given up (`queue bounce`): the due bounce softly, one cut short by a crash too; one in flight keeps its outcome.
   */
  async #giveUp(email: Email, due: string[]): Promise<void> {
    if (due.length === 0) return;
    await this.#startSending(email);
    const outcomes = due.map((r) => givenUp(r, email.state.recipients[r]!.attempts, email.destination));
    await this.#recordOutcomes(email, outcomes);
  }

  /** A queued email becomes `sending` (EmailSendingStarted) before outcomes that no attempt gave (no domain). */
  async #startSending(email: Email): Promise<void> {
    if (email.state.lifecycle !== 'queued') return;
    await this.#took(email, await startSending(this.services, email.meta, email.id, email.history));
  }

  /**
   * Builds the message (tracking, attachments, VERP), records the attempt, and sends it to the recipients the
   * record names (another process may have started an attempt on the others meanwhile): one SMTP transaction per
   * destination, DKIM-signed, nothing of it later than ATTEMPT_LIMIT_MS after the record. Then records what the
   * servers said.
   */
  async #attempt(
    email: Email,
    domain: SendingDomain,
    { recipients, early, group, egress }: Attempt,
  ): Promise<void> {
    const message = await buildOutboundMessage(this.services, email.content, domain);
    const startedAt = this.services.clock.now().getTime();
    const endsBy = new Date(startedAt + ATTEMPT_LIMIT_MS + ATTEMPT_MARGIN_MS).toISOString();
    const before = email.state.recipients;
    const started = await startDeliveryAttempt(
      this.services,
      email.meta,
      email.id,
      { recipients, endsBy, ...(early && { early }), ...this.#egress.recorded(egress) },
      email.history,
    );
    await this.#took(email, started);
    const attempt = started.events.find((e) => e.type === 'EmailDeliveryAttemptStarted');
    if (!attempt) return this.#egress.release(egress);
    for (const r of attempt.data.outcomeUnknown ?? []) {
      const earlier = before[r]?.inFlight?.startedAt;
      if (earlier) this.#unknown.forget(email.id, earlier);
    }
    // The limit counts from the record, whatever its append took.
    const withinMs = startedAt + ATTEMPT_LIMIT_MS - this.services.clock.now().getTime();
    const limits = { ...group.limits, group: group.name, source: this.#egress.bound(egress) };
    const sent = await this.#mta.send(message, attempt.data.recipients, { withinMs, limits });
    const decided = this.#decide(email, sent);
    // A wait for a connection slot (`attempted: false`) is no server's reply: the log and shaping learn nothing.
    const replies = decided.filter((o) => o.attempted !== false);
    const at = this.services.clock.now().toISOString();
    const where = { ...email.meta, destination: email.destination, group: group.name, at };
    this.#destinations.noteOutcomes(where, replies);
    await this.#recordOutcomes(email, decided);
    await this.#shaping.observe(group, replies);
  }

  /** What each server's answer becomes: delivered, delayed until its retry, or bounced with its class. */
  #decide(email: Email, outcomes: RecipientOutcome[]): DeliveryOutcome[] {
    const now = this.services.clock.now();
    return outcomes.map((o) => outcomeOf(email.state, o, now, this.services.policies.bounceRules));
  }

  /**
   * Records each recipient's outcome. What the servers said is kept until it is written (writeUntilWritten): a database that is away delays the
   * record, it never loses it while the process lives.
   */
  async #recordOutcomes(email: Email, decided: DeliveryOutcome[]): Promise<void> {
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

  override async stop(): Promise<void> {
    this.#stoppingSince = Date.now();
    try {
      await super.stop();
      await this.#mta.close();
      this.#slots?.close();
      await this.#destinations.flush();
    } finally {
      this.#stoppingSince = undefined;
    }
  }
}
