import { broadcastDecider } from '../../domain/broadcasts/broadcast.decider.ts';
import { type BroadcastContent, broadcastStream } from '../../domain/broadcasts/broadcast.events.ts';
import { checkBroadcastContent } from '../../domain/broadcasts/broadcast-content.ts';
import { domainOf, parseMailbox } from '../../domain/emails/addresses.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { rebuildState, tenantCommands } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { checkSendAt } from '../emails/email-limits.ts';
import { domainNotVerified } from '../emails/sending-domain.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>;

const invalid = (field: string, message: string) =>
  new AppError('validation_error', `\`${field}\`: ${message}`);

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

/**
 * The content's rules, then what it names: a From address, the audience, the topic, the template (its look-up is
 * returned, for a send to check it is published).
 */
async function checkContent(services: Deps, tenant: Tenant, content: BroadcastContent) {
  const from = parseMailbox(content.from);
  if ('error' in from) throw invalid('from', from.error);
  content.replyTo.forEach((r, i) => {
    const m = parseMailbox(r);
    if ('error' in m) throw invalid(`reply_to[${i}]`, m.error);
  });
  checkBroadcastContent(content);
  if (!(await services.lookUps.findAudience(services.db, tenant, content.audienceId)))
    throw invalid('audience_id', `audience ${content.audienceId} not found`);
  if (content.topicId && !(await services.lookUps.findTopic(services.db, tenant, content.topicId)))
    throw invalid('topic_id', `topic ${content.topicId} not found`);
  if (!content.templateId) return { template: null };
  const template = await services.lookUps.findPublishedVersion(services.db, tenant, content.templateId);
  if (template.status === 'not_found')
    throw invalid('template_id', `template ${content.templateId} not found`);
  return { template };
}

export async function createBroadcast(services: Deps, meta: EventMetadata, content: BroadcastContent) {
  await checkContent(services, meta, content);
  const broadcastId = newId('bc', services.clock.now().getTime());
  return onBroadcast(services, meta, broadcastId, { type: 'CreateBroadcast', content });
}

/** Changes what `patch` names, while the broadcast is a draft. */
export async function updateBroadcast(
  services: Deps,
  meta: EventMetadata,
  broadcastId: string,
  patch: Partial<BroadcastContent>,
) {
  const { state } = await readBroadcast(services, broadcastId);
  if (!state.exists || state.deleted || state.orgId !== meta.orgId || state.mode !== meta.mode)
    throw notFound('Broadcast', broadcastId);
  const content = { ...state.content, ...patch };
  // Switching between a template and sources of its own: the other kind goes.
  if (patch.templateId) Object.assign(content, { html: patch.html ?? null, text: patch.text ?? null });
  if (patch.html !== undefined || patch.text !== undefined) content.templateId = patch.templateId ?? null;
  await checkContent(services, meta, content);
  return onBroadcast(services, meta, broadcastId, { type: 'UpdateBroadcast', content });
}

export const deleteBroadcast = (services: Deps, meta: EventMetadata, broadcastId: string) =>
  onBroadcast(services, meta, broadcastId, { type: 'DeleteBroadcast' });

export const cancelBroadcast = (services: Deps, meta: EventMetadata, broadcastId: string) =>
  onBroadcast(services, meta, broadcastId, { type: 'CancelBroadcast' });

/**
 * Sends a draft now or at `sendAt`. What must hold for its emails to go is checked here, so the sender hears it
 * now rather than finding every email refused: a live broadcast needs a verified domain with an impressum (the
 * footer prints it), a template a published version, the audience and topic must still exist.
 */
export async function sendBroadcast(
  services: Deps,
  auth: AuthContext,
  broadcastId: string,
  sendAt: string | undefined,
) {
  const { state } = await readBroadcast(services, broadcastId);
  if (!state.exists || state.deleted || state.orgId !== auth.orgId || state.mode !== auth.mode)
    throw notFound('Broadcast', broadcastId);
  if (state.status === 'draft') {
    sendAt = checkSendAt(sendAt, services.clock.now());
    const { content } = state;
    const { template } = await checkContent(services, auth, content);
    const domainName = domainOf((parseMailbox(content.from) as { address: string }).address);
    const domain = await services.lookUps.findSendingDomain(services.db, auth, domainName);
    if (auth.mode === 'live') {
      if (!domain?.canSendLive) throw domainNotVerified(domainName, Boolean(domain));
      if (!domain.impressum)
        throw invalid(
          'from',
          `domain ${domainName} has no impressum; broadcasts print it in their footer (PATCH /v1/domains/${domain.id})`,
        );
    }
    if (template && template.status !== 'published')
      throw new AppError(
        'template_not_published',
        `Template ${content.templateId} has no published version; publish it first.`,
      );
  }
  return onBroadcast(services, metaOf(auth), broadcastId, { type: 'SendBroadcast', plan: auth.plan, sendAt });
}
