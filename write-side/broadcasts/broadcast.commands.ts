import {
  type BroadcastCommand,
  type BroadcastState,
  broadcastDecider,
} from '../../domain/broadcasts/broadcast.decider.ts';
import { type BroadcastContent, broadcastStream } from '../../domain/broadcasts/broadcast.events.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError, visibleTo } from '../../platform/errors.ts';
import { handleCommand, rebuildState, tenantCommands } from '../../platform/eventstore/command.ts';
import { type EventMetadata, WrongExpectedRevisionError } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { cutText } from '../../platform/unstorable-text.ts';
import { checkSendAt } from '../emails/email-limits.ts';
import { checkContent, checkSendable } from './broadcast-checks.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps' | 'caches'>;

export async function readBroadcast(services: Pick<Services, 'store'>, broadcastId: string) {
  const history = await services.store.readStream(broadcastStream(broadcastId));
  return { history, state: rebuildState(broadcastDecider, history) };
}

/** Runs a command on a broadcast of the caller's organization and mode. */
export const runBroadcast = tenantCommands(broadcastStream, broadcastDecider, 'broadcastId');
const onBroadcast = async (...args: Parameters<typeof runBroadcast>) => ({
  broadcastId: args[2],
  position: (await runBroadcast(...args)).position,
});

export async function createBroadcast(services: Deps, meta: EventMetadata, content: BroadcastContent) {
  await checkContent(services, meta, content);
  const broadcastId = newId('bc', services.clock.now().getTime());
  return onBroadcast(services, meta, broadcastId, { type: 'CreateBroadcast', content });
}

/** How often a change is worked out again on a broadcast that changed meanwhile, before it gives up (409). */
const UPDATE_ATTEMPTS = 5;

/**
 * Changes what `patch` names, while the broadcast is a draft: on the broadcast as it is when the change is
 * written, so that another change that came in meanwhile keeps the fields it named.
 */
export async function updateBroadcast(
  services: Deps,
  meta: EventMetadata,
  broadcastId: string,
  patch: Partial<BroadcastContent>,
) {
  const command = async (given: BroadcastState): Promise<BroadcastCommand> => {
    const state = visibleTo(given, meta, 'Broadcast', broadcastId);
    const content = { ...state.content, ...patch };
    // Switching between a template and sources of its own: the other kind goes.
    if (patch.templateId) Object.assign(content, { html: patch.html ?? null, text: patch.text ?? null });
    if (patch.html !== undefined || patch.text !== undefined) content.templateId = patch.templateId ?? null;
    await checkContent(services, meta, content);
    const { orgId, mode } = meta;
    return {
      type: 'UpdateBroadcast',
      broadcastId,
      orgId,
      mode,
      at: services.clock.now().toISOString(),
      content,
    };
  };
  const stream = broadcastStream(broadcastId);
  const result = await handleCommand(services.store, stream, broadcastDecider, command, meta, {
    retries: UPDATE_ATTEMPTS - 1,
  }).catch((error) => {
    if (!(error instanceof WrongExpectedRevisionError)) throw error;
    throw new AppError('concurrent_modification', 'The broadcast kept changing meanwhile; try again.');
  });
  return { broadcastId, position: result.position };
}

export const deleteBroadcast = (services: Deps, meta: EventMetadata, broadcastId: string) =>
  onBroadcast(services, meta, broadcastId, { type: 'DeleteBroadcast' });

export const cancelBroadcast = (services: Deps, meta: EventMetadata, broadcastId: string) =>
  onBroadcast(services, meta, broadcastId, { type: 'CancelBroadcast' });

/**
 * What the send of a draft with `content` checks first: its time, returned as the instant it means now (ISO), and
 * what its emails will need (`checkSendable`).
 */
export async function checkDraftSend(
  services: Deps,
  auth: AuthContext,
  content: BroadcastContent,
  sendAt: string | undefined,
) {
  const at = checkSendAt(sendAt, services.clock.now());
  await checkSendable(services, auth, content);
  return at;
}

/** Sends a draft now or at `sendAt`, once its checks pass (`checkDraftSend`). */
export async function sendBroadcast(
  services: Deps,
  auth: AuthContext,
  broadcastId: string,
  sendAt: string | undefined,
) {
  const state = visibleTo((await readBroadcast(services, broadcastId)).state, auth, 'Broadcast', broadcastId);
  if (state.status === 'draft') sendAt = await checkDraftSend(services, auth, state.content, sendAt);
  return sendChecked(services, auth, broadcastId, sendAt);
}

/** The send of a draft whose checks passed (`checkDraftSend`): `sendAt` is the instant, ISO, or none for now. */
export const sendChecked = (
  services: Deps,
  auth: AuthContext,
  broadcastId: string,
  sendAt: string | undefined,
) => onBroadcast(services, metaOf(auth), broadcastId, { type: 'SendBroadcast', plan: auth.plan, sendAt });

/** The longest name a broadcast has (the routes' rule). */
export const BROADCAST_NAME_MAX = 200;

/** A new draft with another broadcast's content, in any status of it, named `Copy of <its name>`. */
export async function duplicateBroadcast(services: Deps, auth: AuthContext, broadcastId: string) {
  const { content } = visibleTo(
    (await readBroadcast(services, broadcastId)).state,
    auth,
    'Broadcast',
    broadcastId,
  );
  return createBroadcast(services, metaOf(auth), {
    ...content,
    name: cutText(`Copy of ${content.name}`, BROADCAST_NAME_MAX),
  });
}
