import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { inboundMessageDecider } from '../../domain/received-emails/inbound-message.decider.ts';
import { inboundMessageStream } from '../../domain/received-emails/received-email.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import type { ArrivedMessage, InboundTarget } from './received-message.ts';

/** The SHA-256 of a message's bytes, read back from the blob store. */
async function digestOf(raw: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of raw) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * What is the same each time a sender sends a message to an organization, and differs for any other message: the
 * organization, the mode, the envelope (sender, and this organization's recipients in any order) and the bytes.
 */
const arrivalKey = (target: InboundTarget, mailFrom: string, digest: string) =>
  createHash('sha256')
    .update(JSON.stringify([target.orgId, target.mode, mailFrom, [...target.recipients].sort(), digest]))
    .digest('hex');

/**
 * The ids of the received emails a message is recorded as, one per target (docs/receiving.md, "Retries"). A message
 * for several organizations is recorded in one append each, so a failure after the first leaves it recorded for
 * some: for such a message that its sender may send again, each organization's id is claimed, before anything is
 * recorded, in the stream of the message's key for that organization. The first attempt claims a new id, and a
 * retry finds it there: its record for an organization the first attempt recorded finds that id's stream taken, and
 * records nothing more. The ids keep the first attempt's time, in order as list pagination wants (a hash of the
 * message could not give its time). A message for one organization is recorded whole or not at all: new ids.
 */
export async function receivedEmailIds(
  services: Pick<Services, 'store'>,
  message: Pick<ArrivedMessage, 'read' | 'mailFrom' | 'retryable'>,
  targets: InboundTarget[],
  actor: string,
  now: Date,
): Promise<string[]> {
  if (!message.retryable || targets.length < 2) return targets.map(() => newId('in', now.getTime()));
  const digest = await digestOf(message.read());
  return Promise.all(
    targets.map(async (target) => {
      const claimed = await handleCommand(
        services.store,
        inboundMessageStream(arrivalKey(target, message.mailFrom, digest)),
        inboundMessageDecider,
        { type: 'ClaimInboundMessage', receivedEmailId: newId('in', now.getTime()), at: now.toISOString() },
        { orgId: target.orgId, mode: target.mode, actor },
        // A first attempt's stream is empty: no need to read it; a retry's append finds the claim and reads it.
        { history: [] },
      );
      return claimed.state!.receivedEmailId;
    }),
  );
}
