import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { dnsRecordsFor, dnsSettings, TRACKING_LABEL } from '../../domain/domains/dns-records.ts';
import type { DomainCommand } from '../../domain/domains/domain.decider.ts';
import { type DkimKey, domainNameStream, domainStream } from '../../domain/domains/domain.events.ts';
import { domainNameDecider } from '../../domain/domains/domain-name.decider.ts';
import { rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { SLOT_ABANDONED_AFTER_MS } from '../plan-slots/plan-slot.commands.ts';

export type Deps = Pick<Services, 'store' | 'clock' | 'config' | 'secrets' | 'db' | 'lookUps'>;

export interface NewDomain {
  name: string;
  openTracking: boolean;
  clickTracking: boolean;
  inboundEnabled: boolean;
}

// What adding a domain needs besides its handler (domain.commands.ts): its name's registration, DKIM key and records.

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * A fresh RSA 2048 key. The selector carries the month and a random part: it names this key in DNS, so a
 * rotated key gets a new selector and both can be published while mail signed with the old one is in flight.
 * Two organizations registering the same name get different selectors, so their records do not collide.
 */
export async function newDkimKey(services: Deps, at: Date): Promise<DkimKey> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const month = at.toISOString().slice(0, 7).replace('-', '');
  return {
    selector: `pl${month}${randomBytes(3).toString('hex')}`,
    publicKey: publicKey.toString('base64'),
    sealedPrivateKey: services.secrets.seal(privateKey),
    createdAt: at.toISOString(),
  };
}

/**
 * A fresh Ed25519 key (RFC 8463) to sign beside RSA, under a selector of its own (`ed` instead of `pl`). Its
 * record's `p=` is the raw 32-byte public key: the SubjectPublicKeyInfo's last 32 bytes.
 */
export async function newEd25519Key(services: Deps, at: Date): Promise<DkimKey> {
  const { publicKey, privateKey } = await generateKeyPairAsync('ed25519', {
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const month = at.toISOString().slice(0, 7).replace('-', '');
  return {
    selector: `ed${month}${randomBytes(3).toString('hex')}`,
    publicKey: publicKey.subarray(-32).toString('base64'),
    sealedPrivateKey: services.secrets.seal(privateKey),
    createdAt: at.toISOString(),
  };
}

/**
 * The registration of a domain's name as a command on the name's stream, read now: the registrations of this
 * organization and mode whose domain was never written (a crash) are released by it. Only old ones: a young one
 * may belong to a request still running, which would otherwise lose its name.
 */
export async function nameRegistration(
  services: Deps,
  meta: EventMetadata,
  name: string,
  domainId: string,
  at: string,
) {
  const stream = domainNameStream(name);
  const history = await services.store.readStream(stream);
  const state = rebuildState(domainNameDecider, history);
  const abandoned: string[] = [];
  for (const [id, r] of Object.entries(state.registrations)) {
    if (
      r.orgId === meta.orgId &&
      r.mode === meta.mode &&
      Date.parse(at) - Date.parse(r.since) > SLOT_ABANDONED_AFTER_MS &&
      (await services.store.readStream(domainStream(id))).length === 0
    )
      abandoned.push(id);
  }
  const command = {
    type: 'RegisterDomainName' as const,
    name,
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    abandoned,
    at,
  };
  return { stream, history, state, command };
}

/** The AddDomain command for a new domain: a fresh DKIM key, and the DNS records to publish for it. */
export async function newDomainCommand(
  services: Deps,
  meta: EventMetadata,
  input: NewDomain & { domainId: string; at: Date },
): Promise<DomainCommand> {
  const { domainId, at, ...domain } = input;
  const dkim = await newDkimKey(services, at);
  const settings = dnsSettings(services.config);
  return {
    type: 'AddDomain',
    domainId,
    orgId: meta.orgId,
    mode: meta.mode,
    ...domain,
    dkim,
    returnPathDomain: `${settings.returnPathSubdomain}.${domain.name}`,
    trackingDomain: `${TRACKING_LABEL}.${domain.name}`,
    records: dnsRecordsFor(
      {
        id: domainId,
        name: domain.name,
        selector: dkim.selector,
        publicKey: dkim.publicKey,
        inboundEnabled: domain.inboundEnabled,
      },
      settings,
    ),
    at: at.toISOString(),
  };
}
