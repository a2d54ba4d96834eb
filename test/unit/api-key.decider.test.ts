import { describe, it } from 'vitest';
import { apiKeyDecider } from '../../domain/api-keys/api-key.decider.ts';
import type { ApiKeyEvent } from '../../domain/api-keys/api-key.events.ts';
import { organizationDecider } from '../../domain/organizations/organization.decider.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const created: ApiKeyEvent = {
  type: 'ApiKeyCreated',
  data: {
    keyId: 'key_1',
    orgId: 'org_1',
    mode: 'live',
    name: 'k',
    permission: 'full_access',
    domainId: null,
    keyHash: 'h',
    keyPrefix: 'pk_live_abcdefgh',
    createdAt: '2026-01-01T00:00:00.000Z',
  },
};
const create = {
  type: 'CreateApiKey' as const,
  ...created.data,
  at: created.data.createdAt,
};
const del = {
  type: 'DeleteApiKey' as const,
  keyId: 'key_1',
  orgId: 'org_1',
  mode: 'live' as const,
  at: '2026-01-02T00:00:00.000Z',
};

describe('API key decider', () => {
  it('creates a key', () => spec(apiKeyDecider).given([]).when(create).then([created]));
  it('refuses to create a key twice', () =>
    spec(apiKeyDecider).given([created]).when(create).thenFails('conflict'));
  it('restricts only sending_access keys to a domain', () =>
    spec(apiKeyDecider)
      .given([])
      .when({ ...create, domainId: 'dom_1' })
      .thenFails('validation_error', /sending_access/));
  it('deletes an active key', () =>
    spec(apiKeyDecider)
      .given([created])
      .when(del)
      .then([{ type: 'ApiKeyDeleted', data: { keyId: 'key_1', deletedAt: del.at } }]));
  it('does not delete twice', () =>
    spec(apiKeyDecider)
      .given([created, { type: 'ApiKeyDeleted', data: { keyId: 'key_1', deletedAt: del.at } }])
      .when(del)
      .thenFails('not_found'));
  itHidesFromOtherCallers(apiKeyDecider, [created], del);
  it('deletes nothing that was never created', () =>
    spec(apiKeyDecider).given([]).when(del).thenFails('not_found'));
});

describe('organization decider', () => {
  const cmd = {
    type: 'CreateOrganization' as const,
    orgId: 'org_1',
    name: 'Acme',
    plan: 'pro' as const,
    at: '2026-01-01T00:00:00.000Z',
  };
  it('creates an organization', () =>
    spec(organizationDecider)
      .given([])
      .when(cmd)
      .then([
        {
          type: 'OrganizationCreated',
          data: { orgId: 'org_1', name: 'Acme', plan: 'pro', createdAt: cmd.at },
        },
      ]));
  it('refuses a second creation', () =>
    spec(organizationDecider)
      .given([
        {
          type: 'OrganizationCreated',
          data: { orgId: 'org_1', name: 'Acme', plan: 'pro', createdAt: cmd.at },
        },
      ])
      .when(cmd)
      .thenFails('conflict'));
});
