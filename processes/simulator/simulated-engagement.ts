import { type EmailCommand, emailDecider } from '../../domain/emails/email.decider.ts';
import { type EmailContent, emailStream } from '../../domain/emails/email.events.ts';
import type { EmailState } from '../../domain/emails/email.state.ts';
import { type Decider, type DomainEvent, handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { sealClientDetails } from '../../write-side/emails/client-details.ts';

/** Who opens and clicks in test mode (recorded, sealed, only when the organization asks): documented. */
const READER = { userAgent: 'Postline simulator', ip: '192.0.2.1' };
/** What clicked@ clicks when the html has no link. */
const SIMULATED_LINK = 'https://simulator.postline.dev/clicked';
/** The html's first http(s) link, as a reader would click it. */
const firstLink = (html: string | null) => (html ? /href="(https?:\/\/[^"]+)"/i.exec(html)?.[1] : undefined);

/** One step of the simulator: a recipient's `seq`-th happening, of `kind`. */
export interface EngagementStep {
  email_id: string;
  recipient: string;
  seq: number;
  step: { kind: 'opened' | 'clicked' };
}

/**
 * The mark a step's event carries (its metadata's `causationId`): the step's key within its email's stream. An
 * open or a click may happen any number of times, so the decider records each one asked for; the mark is what
 * tells the step's own event from another's (two recipients of one email open it, a reader opens it twice).
 */
export const stepMark = (step: Pick<EngagementStep, 'recipient' | 'seq'>) =>
  `simulator:${step.recipient}:${step.seq}`;

interface Marked<S> {
  state: S;
  /** Whether the stream holds an event marked with the step's mark. */
  done: boolean;
}

/** `decider`, deciding nothing once the stream holds an event marked `mark`: a command decided at most once. */
function once<C, E extends DomainEvent, S>(
  decider: Decider<C, E, S>,
  mark: string,
): Decider<C | undefined, E, Marked<S>> {
  return {
    initialState: { state: decider.initialState, done: false },
    evolve: (s, e) => ({
      state: decider.evolve(s.state, e),
      done: s.done || (e as Partial<StoredEvent>).metadata?.causationId === mark,
    }),
    decide: (command, s) => (s.done || command === undefined ? [] : decider.decide(command, s.state)),
  };
}

/**
 * Records the open or click of an opened@ or clicked@ step, once: its event carries the step's mark, and the step
 * decides on the email's stream (`history` as known, read again when another writer came in between) whether that
 * event is there. A step played again (its process crashed after the append, before its row was finished; or its
 * lease ran out while it played) finds it and appends nothing. Resolves with whether it appended.
 */
export async function recordSimulatedEngagement(
  services: Services,
  meta: EventMetadata,
  row: EngagementStep,
  content: EmailContent,
  history: StoredEvent[],
): Promise<boolean> {
  const emailId = row.email_id;
  const mark = stepMark(row);
  const command = async (s: Marked<EmailState>): Promise<EmailCommand | undefined> => {
    if (s.done) return undefined;
    const client = await sealClientDetails(services, { orgId: meta.orgId, emailId }, READER);
    const sealed = client === undefined ? {} : { client };
    const at = services.clock.now().toISOString();
    return row.step.kind === 'opened'
      ? { type: 'RecordOpen', emailId, ...sealed, at }
      : { type: 'RecordClick', emailId, link: firstLink(content.html) ?? SIMULATED_LINK, ...sealed, at };
  };
  const r = await handleCommand(
    services.store,
    emailStream(emailId),
    once(emailDecider, mark),
    command,
    { ...meta, causationId: mark },
    { history },
  );
  return r.events.length > 0;
}
