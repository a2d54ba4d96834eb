import { describe, it } from 'vitest';
import { organizationDecider } from '../../domain/organizations/organization.decider.ts';
import type { OrganizationEvent } from '../../domain/organizations/organization.events.ts';
import { spec } from '../support/given-when-then.ts';

const AT = '2026-11-24T08:00:00.000Z';
const created: OrganizationEvent = {
  type: 'OrganizationCreated',
  data: { orgId: 'org_1', name: 'Acme', plan: 'free', createdAt: AT },
};

describe('organization decider', () => {
  it('creates an organization once', () => {
    spec(organizationDecider)
      .given([])
      .when({ type: 'CreateOrganization', orgId: 'org_1', name: 'Acme', plan: 'free', at: AT })
      .then([created]);
    spec(organizationDecider)
      .given([created])
      .when({ type: 'CreateOrganization', orgId: 'org_1', name: 'Acme', plan: 'free', at: AT })
      .thenFails('conflict', /already exists/);
  });

  it('changes the plan, recording the one it leaves', () =>
    spec(organizationDecider)
      .given([created])
      .when({ type: 'ChangePlan', orgId: 'org_1', plan: 'pro', at: AT })
      .then([
        {
          type: 'OrganizationPlanChanged',
          data: { orgId: 'org_1', plan: 'pro', previousPlan: 'free', changedAt: AT },
        },
      ]));

  it('records nothing for the plan it is on, and refuses an organization that does not exist', () => {
    const changed: OrganizationEvent = {
      type: 'OrganizationPlanChanged',
      data: { orgId: 'org_1', plan: 'business', previousPlan: 'free', changedAt: AT },
    };
    spec(organizationDecider)
      .given([created, changed])
      .when({ type: 'ChangePlan', orgId: 'org_1', plan: 'business', at: AT })
      .then([]);
    spec(organizationDecider)
      .given([])
      .when({ type: 'ChangePlan', orgId: 'org_2', plan: 'pro', at: AT })
      .thenFails('not_found', /org_2/);
  });

  it('turns the recording of client details on and off, recording nothing when it is as asked', () => {
    const on: OrganizationEvent = {
      type: 'OrganizationSettingsChanged',
      data: { orgId: 'org_1', trackClientDetails: true, changedAt: AT },
    };
    const turnOn = { type: 'ChangeSettings', orgId: 'org_1', trackClientDetails: true, at: AT } as const;
    spec(organizationDecider).given([created]).when(turnOn).then([on]);
    spec(organizationDecider).given([created, on]).when(turnOn).then([]);
    spec(organizationDecider)
      .given([created])
      .when({ ...turnOn, trackClientDetails: false })
      .then([]);
    spec(organizationDecider)
      .given([created, on])
      .when({ ...turnOn, trackClientDetails: false })
      .then([{ ...on, data: { ...on.data, trackClientDetails: false } }]);
    spec(organizationDecider).given([]).when(turnOn).thenFails('not_found', /org_1/);
  });
});
