import { AppError } from '../../platform/errors.ts';
import { dkimRecordName, pendingDkimRecord } from './dns-records.ts';
import type { DkimKey, DnsRecord, DomainEvent } from './domain.events.ts';

/** The Ed25519 key of a domain (RFC 8463), signing beside the RSA key once its record verifies. */
export interface Ed25519Keys {
  /** The selector whose key signs; null until a record verified. */
  active: string | null;
  pending: DkimKey | null;
}

export const ed25519RecordValue = (publicKey: string) => `v=DKIM1; k=ed25519; p=${publicKey}`;

interface Ed25519Domain {
  domainId: string;
  name: string;
  records: DnsRecord[];
  ed25519: Ed25519Keys;
}

/**
 * An Ed25519 key beside RSA: listed `pending` and not required (receivers that do not know Ed25519 ignore its
 * signature, so the domain's status rests on RSA). One per domain: 409 when it has one already.
 */
export function addEd25519(domain: Ed25519Domain, command: { dkim: DkimKey; at: string }): DomainEvent[] {
  if (domain.ed25519.active || domain.ed25519.pending)
    throw new AppError('conflict', `Domain ${domain.domainId} already has an Ed25519 DKIM key`);
  const record = pendingDkimRecord(
    domain.name,
    command.dkim.selector,
    ed25519RecordValue(command.dkim.publicKey),
  );
  const { domainId, name } = domain;
  return [
    {
      type: 'DomainDkimEd25519Added',
      data: { domainId, name, dkim: command.dkim, records: [...domain.records, record], addedAt: command.at },
    },
  ];
}

/** The pending Ed25519 key signs from the check that finds its record verified. */
export function ed25519AfterCheck(domain: Ed25519Domain, records: DnsRecord[], at: string): DomainEvent[] {
  const pending = domain.ed25519.pending;
  if (!pending) return [];
  const recordName = dkimRecordName(pending.selector, domain.name);
  if (!records.some((r) => r.name === recordName && r.status === 'verified')) return [];
  const activated = records.map((r): DnsRecord => {
    if (r.name !== recordName || r.purpose !== 'dkim') return r;
    const { rotation: _, ...signing } = r;
    return signing;
  });
  return [
    {
      type: 'DomainDkimEd25519Activated',
      data: {
        domainId: domain.domainId,
        name: domain.name,
        selector: pending.selector,
        sealedPrivateKey: pending.sealedPrivateKey,
        records: activated,
        activatedAt: at,
      },
    },
  ];
}
