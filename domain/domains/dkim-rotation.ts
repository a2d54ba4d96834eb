import { AppError } from '../../platform/errors.ts';
import type { Ed25519Keys } from './dkim-ed25519.ts';
import { dkimRecordName, dkimRecordValue, pendingDkimRecord } from './dns-records.ts';
import type { DkimKey, DnsRecord, DomainEvent } from './domain.events.ts';

/** The keys of a domain as its decider folds them: the one signing, and a rotation's new one until it verifies. */
export interface DkimKeys {
  active: { selector: string; createdAt: string };
  pending: (DkimKey & { graceMs: number }) | null;
}

interface RotatingDomain {
  domainId: string;
  name: string;
  records: DnsRecord[];
  dkim: DkimKeys;
}

/**
 * A new key is listed beside the old one and signs nothing until its record verifies: mail must never carry a
 * signature that receivers cannot check. One rotation at a time (409 while a new key is pending).
 */
export function startRotation(
  domain: RotatingDomain,
  command: { trigger: 'manual' | 'scheduled'; dkim: DkimKey; graceMs: number; at: string },
): DomainEvent[] {
  if (domain.dkim.pending)
    throw new AppError(
      'conflict',
      `Domain ${domain.domainId} already has a pending DKIM key waiting for its record (${domain.dkim.pending.selector})`,
    );
  const record = pendingDkimRecord(
    domain.name,
    command.dkim.selector,
    dkimRecordValue(command.dkim.publicKey),
  );
  const { domainId, name } = domain;
  const { trigger, dkim, graceMs, at } = command;
  return [
    {
      type: 'DomainDkimRotationStarted',
      data: { domainId, name, trigger, dkim, graceMs, records: [...domain.records, record], startedAt: at },
    },
  ];
}

/** An automatic rotation is due when the signing key is older than `rotateAfterMs` (0: never) and none is pending. */
export function dkimRotationDue(keys: DkimKeys, at: string, rotateAfterMs: number): boolean {
  if (rotateAfterMs <= 0 || keys.pending) return false;
  return Date.parse(at) - Date.parse(keys.active.createdAt) >= rotateAfterMs;
}

/**
 * What a DNS check means for a rotation, given the records after it: the pending key signs once its record is
 * verified (the old record becomes `retiring`, no longer required), and retiring records whose grace period
 * has ended become `removable`. `records`: the records after these events.
 */
export function rotationAfterCheck(
  domain: RotatingDomain,
  records: DnsRecord[],
  at: string,
): { events: DomainEvent[]; records: DnsRecord[] } {
  const events: DomainEvent[] = [];
  const { domainId, name } = domain;
  const pending = domain.dkim.pending;
  const newName = pending && dkimRecordName(pending.selector, name);
  if (
    pending &&
    records.some((r) => r.name === newName && r.rotation === 'pending' && r.status === 'verified')
  ) {
    const removableAfter = new Date(Date.parse(at) + pending.graceMs).toISOString();
    const oldName = dkimRecordName(domain.dkim.active.selector, name);
    records = records.map((r): DnsRecord => {
      if (r.purpose !== 'dkim') return r;
      if (r.name === oldName) return { ...r, required: false, rotation: 'retiring', removableAfter };
      if (r.name !== newName) return r;
      const { rotation: _, ...signing } = r;
      return { ...signing, required: true };
    });
    events.push({
      type: 'DomainDkimKeyActivated',
      data: {
        domainId,
        name,
        selector: pending.selector,
        sealedPrivateKey: pending.sealedPrivateKey,
        createdAt: pending.createdAt,
        previousSelector: domain.dkim.active.selector,
        removableAfter,
        records,
        activatedAt: at,
      },
    });
  }
  const due = records.filter((r) => r.rotation === 'retiring' && r.removableAfter && r.removableAfter <= at);
  if (due.length > 0) {
    records = records.map((r): DnsRecord => (due.includes(r) ? { ...r, rotation: 'removable' } : r));
    events.push({
      type: 'DomainDkimKeyRemovable',
      data: {
        domainId,
        name,
        selectors: due.map((r) => r.name.split('._domainkey.')[0]),
        records,
        removableAt: at,
      },
    });
  }
  return { events, records };
}

/** The records a check leaves: a removable old DKIM record that is gone from DNS leaves the list. */
export const withoutRemovedRecords = (records: DnsRecord[]) =>
  records.filter((r) => !(r.rotation === 'removable' && r.status === 'failed'));

type Keys = { records: DnsRecord[]; dkim: DkimKeys; ed25519: Ed25519Keys };

/** A domain's keys and records after a DKIM event (RSA rotation or Ed25519); null for any other event. */
export function evolveKeys(state: Keys, event: DomainEvent): Keys | null {
  switch (event.type) {
    case 'DomainDkimRotationStarted': {
      const { dkim, graceMs, records } = event.data;
      return { ...state, records, dkim: { ...state.dkim, pending: { ...dkim, graceMs } } };
    }
    case 'DomainDkimKeyActivated': {
      const { selector, createdAt, records } = event.data;
      return { ...state, records, dkim: { active: { selector, createdAt }, pending: null } };
    }
    case 'DomainDkimKeyRemovable':
      return { ...state, records: event.data.records };
    case 'DomainDkimEd25519Added':
      return { ...state, records: event.data.records, ed25519: { active: null, pending: event.data.dkim } };
    case 'DomainDkimEd25519Activated':
      return {
        ...state,
        records: event.data.records,
        ed25519: { active: event.data.selector, pending: null },
      };
    default:
      return null;
  }
}
