import type { BroadcastContent, EmailIdScheme } from '../../domain/broadcasts/broadcast.events.ts';
import { envelopeDomain, installationBounceDomain } from '../../domain/domains/dns-records.ts';
import { domainOf, parseMailbox } from '../../domain/emails/addresses.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { findSendingDomain } from '../../read-side/domains/domains.queries.ts';
import { findPublishedVersion } from '../../read-side/templates/templates.queries.ts';
import { findTopic } from '../../read-side/topics/topics.queries.ts';
import { unsubscribeBase } from '../../write-side/broadcasts/unsubscribe.commands.ts';
import { type BroadcastSending, broadcastEmailIds, renderer } from './broadcast-email.ts';

type Deps = Pick<Services, 'db' | 'config' | 'log'>;

/** What each email of a broadcast's run shares: domain, topic, template, renderer and the emails' ids. */
export async function broadcastSending(
  services: Deps,
  broadcast: Tenant & {
    broadcastId: string;
    content: BroadcastContent;
    /** When it started sending, and the scheme of its emails' ids it recorded then. */
    startedAt: string;
    emailIds: EmailIdScheme;
  },
): Promise<BroadcastSending> {
  const { db, config, log } = services;
  const { broadcastId, content } = broadcast;
  const tenant = { orgId: broadcast.orgId, mode: broadcast.mode };
  const domainName = domainOf((parseMailbox(content.from) as { address: string }).address);
  const [domain, topic, template] = await Promise.all([
    findSendingDomain(db, tenant, domainName),
    content.topicId ? findTopic(db, tenant, content.topicId) : null,
    content.templateId ? findPublishedVersion(db, tenant, content.templateId) : null,
  ]);
  const version = template?.status === 'published' ? template.version : null;
  // A template broadcast never falls back to its own sources (blank): when its template is gone (deleted past the
  // delete's check), it has no text and sends to no one (broadcast-step.ts).
  const textless = Boolean(content.templateId) && !version;
  if (textless)
    log.warn(
      { broadcastId, templateId: content.templateId },
      'broadcast template has no published version: no contact is sent to',
    );
  // Nor does a topic broadcast ever drop its topic: when the topic is gone (deleted past the delete's check), no
  // contact's choice can be known and no one is sent to (broadcast-step.ts).
  if (content.topicId && !topic)
    log.warn({ broadcastId, topicId: content.topicId }, 'broadcast topic is gone: no contact is sent to');
  return {
    broadcastId,
    content,
    topicId: content.topicId,
    topicDefault: topic?.default_subscription ?? null,
    domain,
    domainName,
    version,
    render: textless ? null : renderer(broadcastId, content, version),
    emailIdOf: broadcastEmailIds(broadcastId, broadcast.startedAt, broadcast.emailIds),
    unsubscribeBase: unsubscribeBase(config),
    // The List-Unsubscribe mailto goes where the emails' bounces go: the MX takes it there.
    returnPath: domain ? envelopeDomain(domain, config) : installationBounceDomain(config),
  };
}
