import { describe, it } from 'vitest';
import { ed25519RecordValue } from '../../domain/domains/dkim-ed25519.ts';
import { dkimRecordValue } from '../../domain/domains/dns-records.ts';
import { domainDecider } from '../../domain/domains/domain.decider.ts';
import type { DnsRecord, DomainEvent, RecordCheck } from '../../domain/domains/domain.events.ts';
import { spec } from '../support/given-when-then.ts';

const t0 = '2026-01-01T00:00:00.000Z';
const t1 = '2026-01-02T00:00:00.000Z';
const t2 = '2026-01-03T00:00:00.000Z';
const who = { domainId: 'dom_1', orgId: 'org_1', mode: 'live' as const };
const base = { domainId: 'dom_1', name: 'example.com' };
const rsaRecord: DnsRecord = {
  type: 'TXT',
  name: 'pl1._domainkey.example.com',
  value: dkimRecordValue('RSAPUB'),
  purpose: 'dkim',
  required: true,
  status: 'verified',
  found: [dkimRecordValue('RSAPUB')],
};
const edKey = { selector: 'ed1', publicKey: 'EDPUB', sealedPrivateKey: 'v1.ed', createdAt: t1 };
const edPending: DnsRecord = {
  type: 'TXT',
  name: 'ed1._domainkey.example.com',
  value: ed25519RecordValue('EDPUB'),
  purpose: 'dkim',
  required: false,
  status: 'pending',
  found: null,
  rotation: 'pending',
};
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
    dkim: { selector: 'pl1', publicKey: 'RSAPUB', sealedPrivateKey: 'v1.rsa', createdAt: t0 },
    returnPathDomain: 'bounces.example.com',
    trackingDomain: 'track.example.com',
    records: [rsaRecord],
    addedAt: t0,
  },
};
const add = { type: 'AddEd25519Dkim' as const, ...who, dkim: edKey, at: t1 };
const edAdded: DomainEvent = {
  type: 'DomainDkimEd25519Added',
  data: { ...base, dkim: edKey, records: [rsaRecord, edPending], addedAt: t1 },
};
const check = (outcome: RecordCheck['outcome']) => ({
  type: 'RecordDnsCheck' as const,
  ...who,
  trigger: 'manual' as const,
  at: t2,
  checks: [rsaRecord, edPending].map(
    (r): RecordCheck => ({
      type: r.type,
      name: r.name,
      purpose: r.purpose,
      outcome: r === rsaRecord ? 'verified' : outcome,
      found: r === rsaRecord || outcome === 'verified' ? [r.value] : [],
    }),
  ),
});
const { rotation: _, ...edSigning } = { ...edPending, status: 'verified' as const, found: [edPending.value] };

describe('Ed25519 beside RSA', () => {
  it('lists its record as pending and not required', () =>
    spec(domainDecider).given([added]).when(add).then([edAdded]));

  it('refuses a second Ed25519 key (409)', () =>
    spec(domainDecider)
      .given([added, edAdded])
      .when(add)
      .thenFails('conflict', /Ed25519/));

  it('signs nothing until its record verifies', () =>
    spec(domainDecider)
      .given([added, edAdded])
      .when(check('failed'))
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            ...base,
            trigger: 'manual',
            status: 'verified',
            records: [rsaRecord, { ...edPending, status: 'failed', found: [] }],
            checkedAt: t2,
          },
        },
        { type: 'DomainVerified', data: { ...base, verifiedAt: t2 } },
      ]));

  it('signs beside RSA from the check that verifies its record', () =>
    spec(domainDecider)
      .given([added, edAdded])
      .when(check('verified'))
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            ...base,
            trigger: 'manual',
            status: 'verified',
            records: [rsaRecord, { ...edPending, status: 'verified', found: [edPending.value] }],
            checkedAt: t2,
          },
        },
        { type: 'DomainVerified', data: { ...base, verifiedAt: t2 } },
        {
          type: 'DomainDkimEd25519Activated',
          data: {
            ...base,
            selector: 'ed1',
            sealedPrivateKey: 'v1.ed',
            records: [rsaRecord, edSigning],
            activatedAt: t2,
          },
        },
      ]));
});
