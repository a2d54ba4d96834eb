import { describe, expect, it } from 'vitest';
import { dkimRotationDue } from '../../domain/domains/dkim-rotation.ts';
import { dkimRecordValue } from '../../domain/domains/dns-records.ts';
import { domainDecider } from '../../domain/domains/domain.decider.ts';
import type { DnsRecord, DomainEvent, RecordCheck } from '../../domain/domains/domain.events.ts';
import { spec } from '../support/given-when-then.ts';

const t0 = '2026-01-01T00:00:00.000Z';
const t1 = '2026-07-01T00:00:00.000Z';
const t2 = '2026-07-02T00:00:00.000Z';
const t3 = '2026-07-08T23:59:59.000Z';
const t4 = '2026-07-10T00:00:00.000Z';
const DAY = 24 * 3600_000;
const who = { domainId: 'dom_1', orgId: 'org_1', mode: 'live' as const };
const base = { domainId: 'dom_1', name: 'example.com' };

const verified = (r: DnsRecord): DnsRecord => ({ ...r, status: 'verified', found: [r.value] });
const oldDkim: DnsRecord = verified({
  type: 'TXT',
  name: 'old._domainkey.example.com',
  value: dkimRecordValue('OLDPUB'),
  purpose: 'dkim',
  required: true,
  status: 'pending',
  found: null,
});
const spf: DnsRecord = verified({
  type: 'TXT',
  name: 'example.com',
  value: 'v=spf1 a:mx.example ~all',
  purpose: 'spf',
  required: true,
  status: 'pending',
  found: null,
});
const newDkimPending: DnsRecord = {
  type: 'TXT',
  name: 'new._domainkey.example.com',
  value: dkimRecordValue('NEWPUB'),
  purpose: 'dkim',
  required: false,
  status: 'pending',
  found: null,
  rotation: 'pending',
};
const oldKey = { selector: 'old', publicKey: 'OLDPUB', sealedPrivateKey: 'v1.old', createdAt: t0 };
const newKey = { selector: 'new', publicKey: 'NEWPUB', sealedPrivateKey: 'v1.new', createdAt: t1 };

const added: DomainEvent = {
  type: 'DomainAdded',
  data: {
    ...base,
    orgId: 'org_1',
    mode: 'live',
    region: 'eu',
    openTracking: false,
    clickTracking: false,
    inboundEnabled: false,
    dkim: oldKey,
    returnPathDomain: 'bounces.example.com',
    trackingDomain: 'track.example.com',
    records: [oldDkim, spf],
    addedAt: t0,
  },
};
const verifiedCheck: DomainEvent = {
  type: 'DomainVerificationChecked',
  data: { ...base, trigger: 'manual', status: 'verified', records: [oldDkim, spf], checkedAt: t0 },
};
const rotate = {
  type: 'RotateDkim' as const,
  ...who,
  trigger: 'manual' as const,
  dkim: newKey,
  graceMs: 7 * DAY,
  at: t1,
};
const started: DomainEvent = {
  type: 'DomainDkimRotationStarted',
  data: {
    ...base,
    trigger: 'manual',
    dkim: newKey,
    graceMs: 7 * DAY,
    records: [oldDkim, spf, newDkimPending],
    startedAt: t1,
  },
};
const checkAt = (at: string, outcomes: Record<string, RecordCheck['outcome']>) => ({
  type: 'RecordDnsCheck' as const,
  ...who,
  trigger: 'periodic' as const,
  at,
  checks: Object.entries(outcomes).map(([name, outcome]): RecordCheck => {
    const r = [oldDkim, spf, newDkimPending].find((x) => x.name === name)!;
    return {
      type: r.type,
      name,
      purpose: r.purpose,
      outcome,
      found: outcome === 'verified' ? [r.value] : [],
    };
  }),
});
const removableAfter = new Date(Date.parse(t2) + 7 * DAY).toISOString();
const newDkimSigning: DnsRecord = { ...verified(newDkimPending), required: true };
delete newDkimSigning.rotation;
const oldRetiring: DnsRecord = { ...oldDkim, required: false, rotation: 'retiring', removableAfter };
const activated: DomainEvent = {
  type: 'DomainDkimKeyActivated',
  data: {
    ...base,
    selector: 'new',
    sealedPrivateKey: 'v1.new',
    createdAt: t1,
    previousSelector: 'old',
    removableAfter,
    records: [oldRetiring, spf, newDkimSigning],
    activatedAt: t2,
  },
};
const allVerified = {
  'old._domainkey.example.com': 'verified',
  'example.com': 'verified',
  'new._domainkey.example.com': 'verified',
} as const;

describe('DKIM key rotation', () => {
  it('lists the new key’s record as pending, beside the old one that keeps signing', () =>
    spec(domainDecider).given([added, verifiedCheck]).when(rotate).then([started]));

  it('refuses a second rotation while a new key is pending (409)', () =>
    spec(domainDecider)
      .given([added, verifiedCheck, started])
      .when(rotate)
      .thenFails('conflict', /pending/));

  it('is not found for another organization', () =>
    spec(domainDecider)
      .given([added])
      .when({ ...rotate, orgId: 'org_2' })
      .thenFails('not_found'));

  it('keeps the old key while the new record is not found', () =>
    spec(domainDecider)
      .given([added, verifiedCheck, started])
      .when(checkAt(t2, { ...allVerified, 'new._domainkey.example.com': 'failed' }))
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            ...base,
            trigger: 'periodic',
            status: 'verified',
            records: [oldDkim, spf, { ...newDkimPending, status: 'failed', found: [] }],
            checkedAt: t2,
          },
        },
      ]));

  it('switches to the new key once its record verifies; the old record is retiring', () =>
    spec(domainDecider)
      .given([added, verifiedCheck, started])
      .when(checkAt(t2, allVerified))
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            ...base,
            trigger: 'periodic',
            status: 'verified',
            records: [oldDkim, spf, verified(newDkimPending)],
            checkedAt: t2,
          },
        },
        activated,
      ]));

  it('keeps the retiring record during the grace period, flags it removable after', () => {
    const given = spec(domainDecider).given([added, verifiedCheck, started, activated]);
    given
      .when(checkAt(t3, allVerified))
      .then((events) => expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked']));
    given.when(checkAt(t4, allVerified)).then([
      {
        type: 'DomainVerificationChecked',
        data: {
          ...base,
          trigger: 'periodic',
          status: 'verified',
          records: [oldRetiring, spf, newDkimSigning],
          checkedAt: t4,
        },
      },
      {
        type: 'DomainDkimKeyRemovable',
        data: {
          ...base,
          selectors: ['old'],
          records: [{ ...oldRetiring, rotation: 'removable' }, spf, newDkimSigning],
          removableAt: t4,
        },
      },
    ]);
  });

  it('drops a removable record once it is gone from DNS, reporting no DNS change', () => {
    const removable: DomainEvent = {
      type: 'DomainDkimKeyRemovable',
      data: {
        ...base,
        selectors: ['old'],
        records: [{ ...oldRetiring, rotation: 'removable' }, spf, newDkimSigning],
        removableAt: t4,
      },
    };
    spec(domainDecider)
      .given([added, verifiedCheck, started, activated, removable])
      .when(checkAt(t4, { ...allVerified, 'old._domainkey.example.com': 'failed' }))
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            ...base,
            trigger: 'periodic',
            status: 'verified',
            records: [spf, newDkimSigning],
            checkedAt: t4,
          },
        },
      ]);
  });

  it('is due automatically when the signing key is older than the setting, never with 0 or a pending key', () => {
    const keys = { active: { selector: 'old', createdAt: t0 }, pending: null };
    expect(dkimRotationDue(keys, t1, 180 * DAY)).toBe(true);
    expect(dkimRotationDue(keys, t1, 200 * DAY)).toBe(false);
    expect(dkimRotationDue(keys, t1, 0)).toBe(false);
    expect(dkimRotationDue({ ...keys, pending: { ...newKey, graceMs: DAY } }, t1, 180 * DAY)).toBe(false);
  });
});
