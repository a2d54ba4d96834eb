import { describe, expect, it } from 'vitest';
import { dnsRecordsFor } from '../../domain/domains/dns-records.ts';
import { domainDecider } from '../../domain/domains/domain.decider.ts';
import type {
  DnsRecord,
  DomainEvent,
  DomainStatus,
  RecordCheck,
} from '../../domain/domains/domain.events.ts';
import { domainStatus } from '../../domain/domains/record-checks.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const at = '2026-01-01T00:00:00.000Z';
const later = '2026-01-02T00:00:00.000Z';
const rec = (
  purpose: DnsRecord['purpose'],
  type: DnsRecord['type'],
  name: string,
  required: boolean,
): DnsRecord => ({
  type,
  name,
  value: `${purpose}-value`,
  purpose,
  required,
  status: 'pending',
  found: null,
});
/** A domain's records today: DKIM and SPF on the domain required; DMARC and the custom return path optional. */
const records = [
  rec('dkim', 'TXT', 'pl1._domainkey.example.com', true),
  rec('spf', 'TXT', 'example.com', true),
  rec('dmarc', 'TXT', '_dmarc.example.com', false),
  { ...rec('return_path', 'MX', 'bounces.example.com', false), priority: 10 },
  rec('return_path', 'TXT', 'bounces.example.com', false),
];
const dkim = { selector: 'pl1', publicKey: 'PUB', sealedPrivateKey: 'v1.sealed', createdAt: at };
const add = {
  type: 'AddDomain' as const,
  domainId: 'dom_1',
  orgId: 'org_1',
  mode: 'live' as const,
  name: 'example.com',
  openTracking: false,
  clickTracking: true,
  inboundEnabled: false,
  dkim,
  returnPathDomain: 'bounces.example.com',
  trackingDomain: 'track.example.com',
  records,
  at,
};
const { type: _t, at: _a, ...addedData } = add;
const added: DomainEvent = { type: 'DomainAdded', data: { ...addedData, region: 'eu', addedAt: at } };
/** Status a check event reports. */
const statusOf = (e: DomainEvent) => (e.type === 'DomainVerificationChecked' ? e.data.status : undefined);
const who = { domainId: 'dom_1', orgId: 'org_1', mode: 'live' as const };

const check = (
  outcomes: Partial<Record<DnsRecord['purpose'], RecordCheck['outcome']>>,
  trigger: 'manual' | 'periodic' = 'manual',
) => ({
  type: 'RecordDnsCheck' as const,
  ...who,
  trigger,
  at: later,
  checks: records
    .filter((r) => outcomes[r.purpose])
    .map((r) => ({
      type: r.type,
      name: r.name,
      purpose: r.purpose,
      outcome: outcomes[r.purpose]!,
      found: outcomes[r.purpose] === 'verified' ? [r.value] : ['other'],
    })),
});
const allOk = { dkim: 'verified', spf: 'verified', return_path: 'verified', dmarc: 'verified' } as const;
/** The records as a check leaves them: a purpose it reported gets that status (and what `check` found), the rest pending. */
const recordsAfter = (statuses: Partial<Record<DnsRecord['purpose'], 'verified' | 'failed'>>): DnsRecord[] =>
  records.map((r) => {
    const status = statuses[r.purpose];
    return status ? { ...r, status, found: status === 'verified' ? [r.value] : ['other'] } : r;
  });
/** The DomainVerificationChecked a manual check at `later` appends. */
const checkedEvent = (
  status: DomainStatus,
  statuses: Partial<Record<DnsRecord['purpose'], 'verified' | 'failed'>>,
): DomainEvent => ({
  type: 'DomainVerificationChecked',
  data: {
    domainId: 'dom_1',
    name: 'example.com',
    trigger: 'manual',
    status,
    records: recordsAfter(statuses),
    checkedAt: later,
  },
});
const verifiedEvent: DomainEvent = {
  type: 'DomainVerified',
  data: { domainId: 'dom_1', name: 'example.com', verifiedAt: later },
};
/** The events of a check, to build a history with. */
const checked = (given: DomainEvent[], outcomes: Parameters<typeof check>[0]) =>
  domainDecider.decide(check(outcomes), given.reduce(domainDecider.evolve, domainDecider.initialState));

describe('domain decider: adding', () => {
  it('adds a pending domain in the EU', () => spec(domainDecider).given([]).when(add).then([added]));
  it('refuses the same id twice', () => spec(domainDecider).given([added]).when(add).thenFails('conflict'));
});

describe('domain decider: DNS checks', () => {
  const verified = [added, ...checked([added], allOk)];
  it('verifies when every required record is found, and says so once', () =>
    spec(domainDecider)
      .given([added])
      .when(check(allOk))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked', 'DomainVerified']);
        expect(events[0].data).toMatchObject({ status: 'verified', trigger: 'manual', checkedAt: later });
        expect(events[1].data).toEqual({ domainId: 'dom_1', name: 'example.com', verifiedAt: later });
      }));

  it('does not verify again when already verified', () =>
    spec(domainDecider)
      .given(verified)
      .when(check(allOk))
      .then([checkedEvent('verified', allOk)]));

  it('verifies without the recommended records', () =>
    spec(domainDecider)
      .given([added])
      .when(check({ dkim: 'verified', spf: 'verified', return_path: 'verified', dmarc: 'failed' }))
      .then([
        checkedEvent('verified', {
          dkim: 'verified',
          spf: 'verified',
          return_path: 'verified',
          dmarc: 'failed',
        }),
        verifiedEvent,
      ]));

  it('is partially verified when some required records are missing', () =>
    spec(domainDecider)
      .given([added])
      .when(check({ dkim: 'verified', spf: 'failed', return_path: 'failed' }))
      .then((events) => {
        expect(events).toHaveLength(1);
        expect(statusOf(events[0])).toBe('partially_verified');
        expect(
          events[0].type === 'DomainVerificationChecked' && events[0].data.records.map((r) => r.status),
        ).toEqual(['verified', 'failed', 'pending', 'failed', 'failed']);
      }));

  it('fails when no required record is found', () =>
    spec(domainDecider)
      .given([added])
      .when(check({ dkim: 'failed', spf: 'failed', return_path: 'failed' }))
      .then((events) => expect(statusOf(events[0])).toBe('failed')));

  it('reports a verified record that disappeared, and stops being verified', () => {
    spec(domainDecider)
      .given(verified)
      .when(check({ ...allOk, dkim: 'failed' }, 'periodic'))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked', 'DomainDnsChanged']);
        expect(events[1].data).toEqual({
          domainId: 'dom_1',
          name: 'example.com',
          records: [
            {
              type: 'TXT',
              name: 'pl1._domainkey.example.com',
              purpose: 'dkim',
              expected: 'dkim-value',
              found: ['other'],
            },
          ],
          status: 'partially_verified',
          detectedAt: later,
        });
      });
  });

  it('reports a DNS change only once, and verifies again when the record is back', () => {
    const broken = [...verified, ...checked(verified, { ...allOk, dkim: 'failed' })];
    spec(domainDecider)
      .given(broken)
      .when(check({ ...allOk, dkim: 'failed' }))
      .then([checkedEvent('partially_verified', { ...allOk, dkim: 'failed' })]);
    spec(domainDecider)
      .given(broken)
      .when(check(allOk))
      .then([checkedEvent('verified', allOk), verifiedEvent]);
  });

  it('keeps the status of a record whose lookup was inconclusive', () => {
    spec(domainDecider)
      .given(verified)
      .when(check({ ...allOk, dkim: 'inconclusive' }, 'periodic'))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked']);
        expect(statusOf(events[0])).toBe('verified');
      });
  });

  itHidesFromOtherCallers(domainDecider, [added], check(allOk));
  it('checks no domain that is deleted or was never added', () => {
    spec(domainDecider).given([]).when(check(allOk)).thenFails('not_found');
    const deleted: DomainEvent = {
      type: 'DomainDeleted',
      data: { domainId: 'dom_1', name: 'example.com', deletedAt: later, purgeAfter: later },
    };
    spec(domainDecider).given([added, deleted]).when(check(allOk)).thenFails('not_found');
  });
});

describe('domain decider: the records a new domain is given', () => {
  const settings = {
    spfInclude: 'spf.postline.test',
    outboundIps: [],
    mxHost: 'mx.postline.test',
    trackingHost: 'track.postline.test',
    returnPathSubdomain: 'bounces',
  };
  const given = dnsRecordsFor(
    { id: 'dom_1', name: 'example.com', selector: 'pl1', publicKey: 'PUB', inboundEnabled: false },
    settings,
  );
  const addedToday: DomainEvent = {
    type: 'DomainAdded',
    data: { ...addedData, records: given, region: 'eu', addedAt: at },
  };
  /** A check that finds the records of these purposes as published, and nothing for the others. */
  const finding = (purposes: DnsRecord['purpose'][]) => ({
    type: 'RecordDnsCheck' as const,
    ...who,
    trigger: 'manual' as const,
    at: later,
    checks: given.map((r) => ({
      type: r.type,
      name: r.name,
      purpose: r.purpose,
      outcome: purposes.includes(r.purpose) ? ('verified' as const) : ('failed' as const),
      found: purposes.includes(r.purpose) ? [r.type === 'MX' ? `10 ${r.value}` : r.value] : [],
    })),
  });

  it('requires DKIM and SPF on the domain; DMARC, tracking and the custom return path are optional', () => {
    expect(given.map((r) => [r.type, r.name, r.purpose, r.required])).toEqual([
      ['TXT', 'pl1._domainkey.example.com', 'dkim', true],
      ['TXT', 'example.com', 'spf', true],
      ['TXT', '_dmarc.example.com', 'dmarc', false],
      ['CNAME', 'track.example.com', 'tracking', false],
      ['MX', 'bounces.example.com', 'return_path', false],
      ['TXT', 'bounces.example.com', 'return_path', false],
    ]);
  });

  it('verifies with DKIM, SPF, DMARC and the tracking CNAME found, the return path not', () =>
    spec(domainDecider)
      .given([addedToday])
      .when(finding(['dkim', 'spf', 'dmarc', 'tracking']))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked', 'DomainVerified']);
        expect(statusOf(events[0])).toBe('verified');
      }));

  it('is not verified without the SPF record on the domain, whatever else is found', () =>
    spec(domainDecider)
      .given([addedToday])
      .when(finding(['dkim', 'dmarc', 'tracking', 'return_path']))
      .then((events) => {
        expect(events.map((e) => e.type)).toEqual(['DomainVerificationChecked']);
        expect(statusOf(events[0])).toBe('partially_verified');
        const records = events[0].type === 'DomainVerificationChecked' ? events[0].data.records : [];
        expect(
          records.filter((r) => r.required && r.status !== 'verified').map((r) => [r.type, r.name]),
        ).toEqual([['TXT', 'example.com']]);
      }));
});

describe('domain decider: domains added under the earlier rules', () => {
  /** What DomainAdded carried before: SPF and an MX on the return-path subdomain, both required. */
  const legacyRecords: DnsRecord[] = [
    rec('dkim', 'TXT', 'pl1._domainkey.example.com', true),
    rec('spf', 'TXT', 'bounces.example.com', true),
    { ...rec('return_path', 'MX', 'bounces.example.com', true), priority: 10 },
    rec('dmarc', 'TXT', '_dmarc.example.com', false),
  ];
  const legacyAdded: DomainEvent = {
    type: 'DomainAdded',
    data: { ...addedData, records: legacyRecords, region: 'eu', addedAt: at },
  };
  /** The same records as read today: the return path's two records optional, its SPF named `return_path`. */
  const today: DnsRecord[] = [
    legacyRecords[0],
    { ...legacyRecords[1], purpose: 'return_path', required: false },
    { ...legacyRecords[2], required: false },
    legacyRecords[3],
  ];
  const outcome = (r: DnsRecord, status: 'verified' | 'failed') => ({
    type: r.type,
    name: r.name,
    purpose: r.purpose,
    outcome: status,
    found: status === 'verified' ? [r.value] : [],
  });
  const dkimOnly = {
    type: 'RecordDnsCheck' as const,
    ...who,
    trigger: 'periodic' as const,
    at: later,
    checks: today.map((r) => outcome(r, r.purpose === 'dkim' ? 'verified' : 'failed')),
  };

  it('folds their records into the optional custom return path', () => {
    const state = domainDecider.evolve(domainDecider.initialState, legacyAdded);
    expect(state.exists && state.records).toEqual(today);
    // A check appended under the earlier rules carries the old records too.
    const oldCheck: DomainEvent = {
      type: 'DomainVerificationChecked',
      data: {
        domainId: 'dom_1',
        name: 'example.com',
        trigger: 'manual',
        status: 'partially_verified',
        records: legacyRecords.map((r) => ({ ...r, status: 'failed', found: [] })),
        checkedAt: at,
      },
    };
    const after = domainDecider.evolve(state, oldCheck);
    expect(after.exists && after.records).toEqual(today.map((r) => ({ ...r, status: 'failed', found: [] })));
    expect(after.exists && after.status).toBe('partially_verified');
  });

  it('verifies one that was partially verified once its DKIM record is found', () => {
    const oldCheck: DomainEvent = {
      type: 'DomainVerificationChecked',
      data: {
        domainId: 'dom_1',
        name: 'example.com',
        trigger: 'manual',
        status: 'partially_verified',
        records: legacyRecords.map((r) => ({
          ...r,
          status: r.purpose === 'dkim' ? 'verified' : 'failed',
          found: r.purpose === 'dkim' ? [r.value] : [],
        })),
        checkedAt: at,
      },
    };
    spec(domainDecider)
      .given([legacyAdded, oldCheck])
      .when(dkimOnly)
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            domainId: 'dom_1',
            name: 'example.com',
            trigger: 'periodic',
            status: 'verified',
            records: today.map((r) =>
              r.purpose === 'dkim'
                ? { ...r, status: 'verified', found: [r.value] }
                : { ...r, status: 'failed', found: [] },
            ),
            checkedAt: later,
          },
        },
        verifiedEvent,
      ]);
  });
});

describe('domain decider: simulated verification (test mode)', () => {
  const testAdded: DomainEvent = {
    type: 'DomainAdded',
    data: { ...addedData, mode: 'test', region: 'eu', addedAt: at },
  };
  const testWho = { ...who, mode: 'test' as const };
  const simulate = (outcome: 'verified' | 'failed') => ({
    type: 'SimulateDnsCheck' as const,
    ...testWho,
    trigger: 'manual' as const,
    outcome,
    at: later,
  });
  /** Every record as the simulation leaves it: found as DNS would answer a record published as asked. */
  const simulatedRecords = (status: 'verified' | 'failed') =>
    records.map((r) => ({
      ...r,
      status,
      found: status === 'failed' ? [] : [r.type === 'MX' ? `10 ${r.value}` : r.value],
    }));
  const simulatedVerified: DomainEvent[] = [
    {
      type: 'DomainVerificationChecked',
      data: {
        domainId: 'dom_1',
        name: 'example.com',
        trigger: 'manual',
        status: 'verified',
        records: simulatedRecords('verified'),
        checkedAt: later,
        simulated: true,
      },
    },
    {
      type: 'DomainVerified',
      data: { domainId: 'dom_1', name: 'example.com', verifiedAt: later, simulated: true },
    },
  ];

  it('verifies every record without DNS, and says the check was simulated', () =>
    spec(domainDecider).given([testAdded]).when(simulate('verified')).then(simulatedVerified));

  it('remembers the simulation, until a check over DNS', () => {
    const state = [testAdded, ...simulatedVerified].reduce(domainDecider.evolve, domainDecider.initialState);
    expect(state.exists && state.simulation).toBe('verified');
    const real = domainDecider.decide({ ...check(allOk), mode: 'test' }, state);
    const after = real.reduce(domainDecider.evolve, state);
    expect(after.exists && after.simulation).toBeNull();
  });

  it('simulates records that break: DomainDnsChanged, simulated', () =>
    spec(domainDecider)
      .given([testAdded, ...simulatedVerified])
      .when({ ...simulate('failed'), at: '2026-01-03T00:00:00.000Z' })
      .then([
        {
          type: 'DomainVerificationChecked',
          data: {
            domainId: 'dom_1',
            name: 'example.com',
            trigger: 'manual',
            status: 'failed',
            records: simulatedRecords('failed'),
            checkedAt: '2026-01-03T00:00:00.000Z',
            simulated: true,
          },
        },
        {
          type: 'DomainDnsChanged',
          data: {
            domainId: 'dom_1',
            name: 'example.com',
            records: records.map((r) => ({
              type: r.type,
              name: r.name,
              purpose: r.purpose,
              expected: r.value,
              found: [],
            })),
            status: 'failed',
            detectedAt: '2026-01-03T00:00:00.000Z',
            simulated: true,
          },
        },
      ]));

  it('refuses a live domain: live domains verify over DNS', () =>
    spec(domainDecider)
      .given([added])
      .when({ ...simulate('verified'), mode: 'live' })
      .thenFails('test_mode_only', /live domain verifies over DNS/));

  itHidesFromOtherCallers(domainDecider, [testAdded], simulate('verified'));
});

describe('domain decider: updates', () => {
  const update = { type: 'UpdateDomain' as const, ...who, inboundMxHost: 'mx.postline.test', at: later };

  it('changes tracking settings', () =>
    spec(domainDecider)
      .given([added])
      .when({ ...update, openTracking: true })
      .then([
        {
          type: 'DomainUpdated',
          data: {
            domainId: 'dom_1',
            name: 'example.com',
            openTracking: true,
            clickTracking: true,
            inboundEnabled: false,
            impressum: null,
            records,
            updatedAt: later,
          },
        },
      ]));

  it('adds the inbound MX record and the DMARC rua when inbound is enabled, and removes both when disabled', () => {
    const mx: DnsRecord = {
      type: 'MX',
      name: 'example.com',
      value: 'mx.postline.test',
      priority: 10,
      purpose: 'inbound',
      required: false,
      status: 'pending',
      found: null,
    };
    const enabled = domainDecider.decide(
      { ...update, inboundEnabled: true },
      domainDecider.evolve(domainDecider.initialState, added),
    );
    const dmarc = (value: string) => records.map((r) => (r.purpose === 'dmarc' ? { ...r, value } : r));
    const rua = `v=DMARC1; p=none; rua=mailto:dmarc+${added.data.domainId}@mx.postline.test`;
    expect(enabled[0].type === 'DomainUpdated' && enabled[0].data.records).toEqual([...dmarc(rua), mx]);
    spec(domainDecider)
      .given([added, ...enabled])
      .when({ ...update, inboundEnabled: false })
      .then((events) =>
        expect(events[0].type === 'DomainUpdated' && events[0].data.records).toEqual(
          dmarc('v=DMARC1; p=none;'),
        ),
      );
  });

  it('sets and removes the impressum', () => {
    const impressum = {
      company_name: 'Acme GmbH',
      address: 'Hauptstr. 1, 10115 Berlin',
      country: 'DE',
      email: 'legal@acme.example',
    };
    const set = domainDecider.decide(
      { ...update, impressum },
      domainDecider.evolve(domainDecider.initialState, added),
    );
    expect(set[0].type === 'DomainUpdated' && set[0].data.impressum).toEqual(impressum);
    spec(domainDecider)
      .given([added, ...set])
      .when({ ...update, impressum: null })
      .then((events) => expect(events[0].type === 'DomainUpdated' && events[0].data.impressum).toBeNull());
  });

  it('appends nothing when nothing changes', () =>
    spec(domainDecider)
      .given([added])
      .when({ ...update, clickTracking: true, inboundEnabled: false })
      .then([]));

  itHidesFromOtherCallers(domainDecider, [added], { ...update, openTracking: true });
});

describe('domain decider: delete and purge', () => {
  const purgeAfter = '2026-01-31T00:00:00.000Z';
  const del = { type: 'DeleteDomain' as const, ...who, at: later, purgeAfter };
  const deleted: DomainEvent = {
    type: 'DomainDeleted',
    data: { domainId: 'dom_1', name: 'example.com', deletedAt: later, purgeAfter },
  };
  const purge = { type: 'PurgeDomain' as const, domainId: 'dom_1', at: purgeAfter };
  const purged: DomainEvent = {
    type: 'DomainPurged',
    data: { domainId: 'dom_1', name: 'example.com', purgedAt: purgeAfter },
  };

  it('soft-deletes with a purge date', () => spec(domainDecider).given([added]).when(del).then([deleted]));
  it('does not delete twice', () =>
    spec(domainDecider).given([added, deleted]).when(del).thenFails('not_found'));
  itHidesFromOtherCallers(domainDecider, [added], del);
  it('purges after the grace period', () =>
    spec(domainDecider).given([added, deleted]).when(purge).then([purged]));
  it('does not purge early', () =>
    spec(domainDecider)
      .given([added, deleted])
      .when({ ...purge, at: '2026-01-30T23:59:59.000Z' })
      .thenFails('conflict'));
  it('does not purge a domain that is not deleted', () =>
    spec(domainDecider).given([added]).when(purge).thenFails('conflict'));
  it('purges once', () => spec(domainDecider).given([added, deleted, purged]).when(purge).then([]));

  const restore = { type: 'RestoreDomain' as const, ...who, at: '2026-01-20T00:00:00.000Z' };
  const restored: DomainEvent = {
    type: 'DomainRestored',
    data: { domainId: 'dom_1', name: 'example.com', restoredAt: restore.at },
  };
  it('restores within the grace period, and the domain can be deleted again', () => {
    spec(domainDecider).given([added, deleted]).when(restore).then([restored]);
    spec(domainDecider)
      .given([added, deleted, restored])
      .when({ ...del, at: '2026-01-21T00:00:00.000Z' })
      .then([
        { ...deleted, data: { ...deleted.data, deletedAt: '2026-01-21T00:00:00.000Z' } } as DomainEvent,
      ]);
  });
  it('does not restore a domain that is not deleted, nor once the grace period is over', () => {
    spec(domainDecider).given([added]).when(restore).thenFails('conflict');
    spec(domainDecider)
      .given([added, deleted])
      .when({ ...restore, at: purgeAfter })
      .thenFails('not_found');
  });
  itHidesFromOtherCallers(domainDecider, [added, deleted], restore);
  it('does not restore a purged domain', () =>
    spec(domainDecider).given([added, deleted, purged]).when(restore).thenFails('not_found'));
});

describe('domain status', () => {
  const withStatus = (...s: DnsRecord['status'][]) =>
    records.slice(0, 3).map((r, i) => ({ ...r, status: s[i] }));
  it('follows the required records', () => {
    expect(domainStatus(withStatus('pending', 'pending', 'pending'))).toBe('pending');
    expect(domainStatus(withStatus('verified', 'verified', 'verified'))).toBe('verified');
    expect(domainStatus(withStatus('verified', 'failed', 'pending'))).toBe('partially_verified');
    expect(domainStatus(withStatus('failed', 'pending', 'pending'))).toBe('failed');
  });
});
