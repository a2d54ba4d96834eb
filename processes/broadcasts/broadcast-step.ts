import type { SkippedRecipients } from '../../domain/broadcasts/broadcast.events.ts';
import { topicReaches } from '../../domain/topics/topic-reach.ts';
import { AppError } from '../../platform/errors.ts';
import type { EventMetadata, Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { type AudienceRecipient, audienceRecipients } from '../../read-side/contacts/contacts.queries.ts';
import { readBroadcast, runBroadcast } from '../../write-side/broadcasts/broadcast.commands.ts';
import { acceptEmail, EMAIL_PROJECTIONS } from '../../write-side/emails/accept-email.ts';
import type { EmailDraft } from '../../write-side/emails/email-draft.ts';
import { consumeQuota } from '../../write-side/emails/quota.commands.ts';
import { type BroadcastSending, broadcastDraft, hasText, type RenderableSending } from './broadcast-email.ts';
import { broadcastSending } from './broadcast-sending.ts';
import { withdrawBroadcast } from './broadcast-withdrawal.ts';

/** Emails rendered and handed to the store between two turns of the event loop. */
const SLICE = 50;
/**
 * Slices of a page whose emails may be in the log before the `emails` read model has them (2,000 emails, a page of
 * the default size): a broadcast far ahead of that read model leaves it seconds behind, for every reader and for
 * the transactional sends, which wait for it up to 50 ms before writing their row themselves. A window of 1,000
 * held the expansion to about the batch API's pace (92–104 %), without making those sends any faster.
 */
const SLICES_AHEAD = 40;
/** Pages whose emails are in flight at once, each recorded on the broadcast in turn (as the batch API's requests). */
const PIPELINED_PAGES = 2;

type BroadcastState = Awaited<ReturnType<typeof readBroadcast>>['state'];
type Sending = Extract<BroadcastState, { exists: true }>;
type Step = { next: Date | null; queued: number };

/** A slice of a page's emails: the furthest position their appends landed at, once written. */
type Slice = { last?: Position; written: Promise<unknown> };

/** A page of the audience whose emails are being queued. */
interface Page {
  after: string;
  cursor: string;
  last: boolean;
  skipped: SkippedRecipients;
  writing: Promise<boolean[]>;
}

/**
 * Steps of a broadcast's sending: a scheduled broadcast that is due starts; then page after page of its audience
 * (after the cursor) becomes ordinary emails, each accepted under its own id, and each page is recorded on the
 * broadcast in order (`BroadcastBatchExpanded`, and `BroadcastSent` after the last). The next page is read and its
 * emails started while the one before is written (PIPELINED_PAGES), while `more()` says so (by default one page).
 * Safe to run again: the emails of a page keep their ids, and a page recorded already is not recorded twice.
 * A broadcast canceled while sending has its emails nobody received withdrawn (broadcast-withdrawal.ts).
 * Returns when the next step is due (null: the broadcast needs none), and how many emails this run queued.
 */
export const expandBroadcast = (
  services: Services,
  broadcastId: string,
  more: () => boolean = () => false,
): Promise<Step> => new BroadcastStep(services, broadcastId).run(more);

class BroadcastStep {
  readonly services: Services;
  readonly broadcastId: string;
  #meta!: EventMetadata;

  constructor(services: Services, broadcastId: string) {
    this.services = services;
    this.broadcastId = broadcastId;
  }

  async run(more: () => boolean): Promise<Step> {
    const state = await this.#startIfDue();
    if (state.exists && state.status === 'canceled') {
      // An email being sent goes on; once its attempt has ended, a deferral it got is withdrawn too.
      const next = await withdrawBroadcast(this.services, this.#meta, this.broadcastId);
      return { next, queued: 0 };
    }
    if (!state.exists || state.status !== 'sending')
      return {
        next: state.exists && state.status === 'scheduled' ? new Date(state.sendAt!) : null,
        queued: 0,
      };
    const sending = await broadcastSending(this.services, {
      ...state,
      broadcastId: this.broadcastId,
      startedAt: state.startedAt!,
      emailIds: state.emailIds!,
    });
    const inFlight: Page[] = [];
    let [cursor, read, queued, pages] = [state.cursor, false, 0, 0];
    for (;;) {
      while (!read && inFlight.length < PIPELINED_PAGES && (pages++ === 0 || more())) {
        const page = await this.#startPage(state, sending, cursor);
        inFlight.push(page);
        [cursor, read] = [page.cursor, page.last];
      }
      const page = inFlight.shift();
      if (!page) return { next: read ? null : this.services.clock.now(), queued };
      const results = await page.writing;
      const done = results.filter(Boolean).length;
      queued += done;
      const { after, skipped, last } = page;
      skipped.failed += results.length - done;
      const recorded = await this.#recordStep({ after, cursor: page.cursor, queued: done, skipped, last });
      // Sent, canceled, or another run recorded this page first (it goes on from there): this one stops. A
      // canceled one has its emails withdrawn by the next step, once the pages in flight are written.
      if (!recorded.exists || recorded.status !== 'sending' || recorded.cursor !== page.cursor) {
        await Promise.allSettled(inFlight.map((p) => p.writing));
        const again = recorded.exists && (recorded.status === 'sending' || recorded.status === 'canceled');
        return { next: again ? this.services.clock.now() : null, queued };
      }
    }
  }

  /** The broadcast as it stands; a scheduled one that is due starts sending (a rescheduled one waits). */
  async #startIfDue(): Promise<BroadcastState> {
    const { state } = await readBroadcast(this.services, this.broadcastId);
    if (!state.exists || state.deleted) return { exists: false } as BroadcastState;
    this.#meta = { orgId: state.orgId, mode: state.mode, actor: 'system' };
    if (state.status !== 'scheduled') return state;
    return (await this.#decide({ type: 'StartSending' })).state;
  }

  /** The next contacts of the audience after `after`, their quota taken and their emails started. */
  async #startPage(state: Sending, sending: BroadcastSending, after: string): Promise<Page> {
    const limit = this.services.config.BROADCAST_EXPANSION_BATCH;
    const tenant = { orgId: state.orgId, mode: state.mode };
    const { audienceId } = state.content;
    const page = await audienceRecipients(this.services.db, tenant, audienceId, {
      topicId: sending.topicId,
      after,
      limit,
    });
    const { candidates, skipped } = this.#eligible(page, sending);
    // Without a text (its template gone) no contact gets an email nor takes quota: each counts as failed.
    const renderable = hasText(sending) ? sending : null;
    const sendable = renderable ? candidates : [];
    skipped.failed = candidates.length - sendable.length;
    // The page's emails are accepted as of one time, the month of its quota grant.
    const at = this.services.clock.now();
    const granted = await this.#takeQuota(state, after, sendable.length, at);
    skipped.quota = sendable.length - granted;
    const writing = renderable
      ? this.#queue(renderable, sendable.slice(0, granted), at)
      : Promise.resolve([]);
    writing.catch(() => {}); // awaited in turn by run
    return { after, cursor: page.at(-1)?.id ?? after, last: page.length < limit, skipped, writing };
  }

  /** The contacts sent to; the others counted by why not (unsubscribed, suppressed, not subscribed to the topic). */
  #eligible(page: AudienceRecipient[], sending: BroadcastSending) {
    const skipped: SkippedRecipients = {
      unsubscribed: 0,
      suppressed: 0,
      notSubscribed: 0,
      quota: 0,
      failed: 0,
    };
    const skipReason = (r: AudienceRecipient): keyof SkippedRecipients | null => {
      if (r.unsubscribed) return 'unsubscribed';
      if (r.suppressed) return 'suppressed';
      // A topic without its default (gone) admits no one, whatever choices its contacts had made.
      if (sending.topicId && (!sending.topicDefault || !topicReaches(sending.topicDefault, r)))
        return 'notSubscribed';
      return null;
    };
    const candidates = page.filter((r) => {
      const reason = skipReason(r);
      if (reason) skipped[reason]++;
      return !reason;
    });
    return { candidates, skipped };
  }

  /** The quota is asked once per page; a page done again gets the grant it had (`request`). */
  async #takeQuota(state: Sending, after: string, wanted: number, at: Date): Promise<number> {
    if (wanted === 0) return 0;
    const payer = { orgId: state.orgId, mode: state.mode, plan: state.plan! };
    try {
      return await consumeQuota(this.services, payer, wanted, at, `${this.broadcastId} ${after}`);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'monthly_quota_exceeded') throw error;
      return 0;
    }
  }

  /** The contact's draft: its text rendered with its data; null (logged) when its data does not render. */
  #render(sending: RenderableSending, r: AudienceRecipient): EmailDraft | null {
    const emailId = sending.emailIdOf(r.id);
    const token = this.services.tokens.unsubscribe.sign(emailId);
    const contact = {
      email: r.email,
      first_name: r.first_name,
      last_name: r.last_name,
      properties: r.properties,
    };
    try {
      const text = sending.render({
        contact,
        unsubscribe_url: `${sending.unsubscribeBase}${token}`,
      });
      return broadcastDraft(sending, r, emailId, token, text);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      this.services.log.warn(
        { broadcastId: this.broadcastId, contactId: r.id, reason: error.message },
        'broadcast email not rendered',
      );
      return null;
    }
  }

  /**
   * Each contact's email through `acceptEmail`; whether it was queued. Rendering is CPU work: between slices the
   * event loop serves requests. The appends of the slices are in flight together and share the store's group
   * commits, at most SLICES_AHEAD slices ahead of the `emails` read model.
   */
  async #queue(sending: RenderableSending, recipients: AudienceRecipient[], at: Date) {
    const queue = async (r: AudienceRecipient, slice: Slice) => {
      const draft = this.#render(sending, r);
      if (!draft) return false;
      const { position } = await acceptEmail(this.services, this.#meta, { ...draft, at });
      if (position && !(slice.last && slice.last > position)) slice.last = position;
      return true;
    };
    const pending: Promise<boolean>[] = [];
    const slices: Slice[] = [];
    for (let i = 0; i < recipients.length; i += SLICE) {
      const behind = slices[slices.length - SLICES_AHEAD];
      if (behind) await this.#projected(behind);
      const slice: Slice = { written: Promise.resolve() };
      const queued = recipients.slice(i, i + SLICE).map((r) => queue(r, slice));
      for (const p of queued) p.catch(() => {}); // awaited below: a failure while the loop waits is not an unhandled one
      slice.written = Promise.allSettled(queued);
      slices.push(slice);
      pending.push(...queued);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return Promise.all(pending);
  }

  /**
   * Resolves once the `emails` read model has the slice's emails. Past PROJECTION_WAIT_MS (the read model slow or
   * away) the expansion goes on: it only slows down for the read model, it never stops for it.
   */
  async #projected(slice: Slice): Promise<void> {
    await slice.written;
    await this.services.readYourWrites.waitFor(EMAIL_PROJECTIONS, slice.last).catch(() => {});
  }

  /** The step on the broadcast: its cursor, counts, and `BroadcastSent` after the last. */
  async #recordStep(step: {
    after: string;
    cursor: string;
    queued: number;
    skipped: SkippedRecipients;
    last: boolean;
  }): Promise<BroadcastState> {
    return (await this.#decide({ type: 'RecordBatch', ...step })).state;
  }

  #decide(command: Parameters<typeof runBroadcast>[3]) {
    return runBroadcast(this.services, this.#meta, this.broadcastId, command);
  }
}
