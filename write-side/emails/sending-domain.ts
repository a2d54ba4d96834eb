import { envelopeDomain, installationBounceDomain } from '../../domain/domains/dns-records.ts';
import { AppError } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import type { Sender } from './email-draft.ts';

/** The refusal of a live send from `name`, a domain of the organization (`known`) or not. */
export const domainNotVerified = (name: string, known: boolean) =>
  new AppError(
    'domain_not_verified',
    known
      ? `\`from\`: domain ${name} is not verified yet; verify its DNS records before sending with a live key.`
      : `\`from\`: ${name} is not a domain of this organization; add and verify it first.`,
  );

/**
 * The sending domain. Live: a domain of the organization that can send (verified). Test: any domain; a
 * registered test-mode domain of that name is linked when there is one. A key restricted to a domain sends
 * only from it (403). A broadcast's was checked when it was sent. `bounceDomain`: where the email's bounces go
 * (its envelope sender's domain), which takes its List-Unsubscribe `mailto:` too; null for a broadcast's email,
 * which has its own.
 */
export async function sendingDomain(
  services: Pick<Services, 'caches' | 'config'>,
  sender: Sender,
): Promise<{ domainId: string | null; domainName: string; bounceDomain: string | null }> {
  if ('broadcast' in sender) return { ...sender.broadcast, bounceDomain: null };
  const { key: auth, fromDomain: name } = sender;
  const { caches } = services;
  const domain = await caches.sendingDomains.get(auth, name);
  if (auth.domainId) {
    const id = auth.domainId;
    const allowed = await caches.domainsById.get(auth, id);
    if (!allowed || allowed.name !== name) {
      throw new AppError(
        'domain_not_allowed',
        `This API key may only send from ${allowed?.name ?? `domain ${auth.domainId}`}.`,
      );
    }
  }
  if (auth.mode === 'live' && !domain?.canSendLive) throw domainNotVerified(name, Boolean(domain));
  return {
    domainId: domain?.id ?? null,
    domainName: domain?.name ?? name,
    bounceDomain: domain
      ? envelopeDomain(domain, services.config)
      : installationBounceDomain(services.config),
  };
}
