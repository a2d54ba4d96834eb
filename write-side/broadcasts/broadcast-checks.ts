import type { BroadcastContent } from '../../domain/broadcasts/broadcast.events.ts';
import { checkBroadcastContent, checkBroadcastTemplate } from '../../domain/broadcasts/broadcast-content.ts';
import { domainOf, parseMailbox } from '../../domain/emails/addresses.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AppError, invalidField } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { domainNotVerified } from '../emails/sending-domain.ts';
import type { BroadcastResource } from '../look-ups.ts';

type Deps = Pick<Services, 'db' | 'lookUps' | 'caches'>;

/**
 * The content's rules, then what it names: a From address, the audience, the topic, the template (its look-up is
 * returned, for a send to check it is published).
 */
export async function checkContent(services: Deps, tenant: Tenant, content: BroadcastContent) {
  const from = parseMailbox(content.from);
  if ('error' in from) throw invalidField('from', from.error);
  content.replyTo.forEach((r, i) => {
    const m = parseMailbox(r);
    if ('error' in m) throw invalidField(`reply_to[${i}]`, m.error);
  });
  checkBroadcastContent(content);
  if (!(await services.lookUps.findAudience(services.db, tenant, content.audienceId)))
    throw invalidField('audience_id', `audience ${content.audienceId} not found`);
  if (content.topicId && !(await services.lookUps.findTopic(services.db, tenant, content.topicId)))
    throw invalidField('topic_id', `topic ${content.topicId} not found`);
  if (!content.templateId) return { template: null };
  const template = await services.lookUps.findPublishedVersion(services.db, tenant, content.templateId);
  if (template.status === 'not_found')
    throw invalidField('template_id', `template ${content.templateId} not found`);
  return { template };
}

/**
 * What must hold for a draft's emails to go, checked when it is sent so the sender hears it now rather than finding
 * every email refused: a live broadcast needs a verified domain with an impressum (the footer prints it), a
 * template a published version that renders with a broadcast's variables, the audience and topic must still exist.
 */
export async function checkSendable(services: Deps, auth: AuthContext, content: BroadcastContent) {
  const { template } = await checkContent(services, auth, content);
  const domainName = domainOf((parseMailbox(content.from) as { address: string }).address);
  const domain = await services.caches.sendingDomains.get(auth, domainName);
  if (auth.mode === 'live') {
    if (!domain?.canSendLive) throw domainNotVerified(domainName, Boolean(domain));
    if (!domain.impressum)
      throw invalidField(
        'from',
        `domain ${domainName} has no impressum; broadcasts print it in their footer (PATCH /v1/domains/${domain.id})`,
      );
  }
  if (template && template.status !== 'published')
    throw new AppError(
      'template_not_published',
      `Template ${content.templateId} has no published version; publish it first.`,
    );
  if (template?.status === 'published')
    checkBroadcastTemplate(template.version.templateId, template.version.variables);
}

/**
 * A template, topic or audience that a scheduled or sending broadcast names is not deleted (409 `conflict`): the
 * contacts still to come would get an email without its text, outside the topic's choices, or as members of an
 * audience that is gone. The broadcast's stream cannot be seen by the resource's decider, so the broadcasts read
 * model is asked first; a deletion racing a send is caught by the expansion, which sends such a broadcast to no one
 * (processes/broadcasts/broadcast-step.ts).
 */
export async function refuseWhileBroadcastUses(
  services: Pick<Services, 'db' | 'lookUps'>,
  tenant: Tenant,
  resource: BroadcastResource,
  resourceId: string,
) {
  const broadcast = await services.lookUps.broadcastUsing(services.db, tenant, resource, resourceId);
  if (!broadcast) return;
  const name = `${resource[0].toUpperCase()}${resource.slice(1)}`;
  throw new AppError(
    'conflict',
    `${name} ${resourceId} is used by broadcast ${broadcast.id}, which is ${broadcast.status}; cancel the broadcast or wait until it is sent, then delete the ${resource}.`,
  );
}
