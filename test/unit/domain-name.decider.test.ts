import { describe, it } from 'vitest';
import type { DomainNameEvent } from '../../domain/domains/domain.events.ts';
import { domainNameDecider } from '../../domain/domains/domain-name.decider.ts';
import { spec } from '../support/given-when-then.ts';

const at = '2026-01-01T00:00:00.000Z';
const name = 'example.com';
const registered = (domainId: string, orgId: string, mode: 'live' | 'test' = 'live'): DomainNameEvent => ({
  type: 'DomainNameRegistered',
  data: { name, domainId, orgId, mode, registeredAt: at },
});
const claimed = (domainId: string, orgId: string): DomainNameEvent => ({
  type: 'DomainNameClaimed',
  data: { name, domainId, orgId, mode: 'live', claimedAt: at },
});
const released = (domainId: string): DomainNameEvent => ({
  type: 'DomainNameReleased',
  data: { name, domainId, releasedAt: at },
});
const register = (
  domainId: string,
  orgId: string,
  mode: 'live' | 'test' = 'live',
  abandoned: string[] = [],
) => ({
  type: 'RegisterDomainName' as const,
  name,
  domainId,
  orgId,
  mode,
  abandoned,
  at,
});
const claim = (domainId: string, orgId: string) => ({
  type: 'ClaimDomainName' as const,
  name,
  domainId,
  orgId,
  mode: 'live' as const,
  at,
});

describe('domain name claims', () => {
  it('registers a new name', () =>
    spec(domainNameDecider)
      .given([])
      .when(register('dom_1', 'org_a'))
      .then([registered('dom_1', 'org_a')]));

  it('refuses the same name twice in one organization and mode', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(register('dom_2', 'org_a'))
      .thenFails('domain_exists', /already has/));

  it('registers nothing again for the domain it is registered to (a retry of the same request)', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(register('dom_1', 'org_a'))
      .then([]));

  it('allows the same name in the other mode', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(register('dom_2', 'org_a', 'test'))
      .then([registered('dom_2', 'org_a', 'test')]));

  it('lets several organizations add a name nobody has verified', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(register('dom_2', 'org_b'))
      .then([registered('dom_2', 'org_b')]));

  it('refuses a name another organization has verified', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a'), claimed('dom_1', 'org_a')])
      .when(register('dom_2', 'org_b'))
      .thenFails('domain_exists', /another organization/));

  it('refuses to verify a name another organization verified first', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a'), registered('dom_2', 'org_b'), claimed('dom_1', 'org_a')])
      .when(claim('dom_2', 'org_b'))
      .thenFails('domain_exists'));

  it('claims once', () => {
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(claim('dom_1', 'org_a'))
      .then([claimed('dom_1', 'org_a')]);
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a'), claimed('dom_1', 'org_a')])
      .when(claim('dom_1', 'org_a'))
      .then([]);
  });

  it('frees the name when the domain is purged', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a'), claimed('dom_1', 'org_a'), released('dom_1')])
      .when(register('dom_2', 'org_b'))
      .then([registered('dom_2', 'org_b')]));

  it('releases only what it holds', () =>
    spec(domainNameDecider)
      .given([])
      .when({ type: 'ReleaseDomainName', name, domainId: 'dom_1', at })
      .then([]));

  it('frees a registration whose domain was never written', () =>
    spec(domainNameDecider)
      .given([registered('dom_1', 'org_a')])
      .when(register('dom_2', 'org_a', 'live', ['dom_1']))
      .then([released('dom_1'), registered('dom_2', 'org_a')]));
});
