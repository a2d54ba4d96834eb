import type { Plan } from '../../platform/tenancy.ts';

export type OrganizationCreated = {
  type: 'OrganizationCreated';
  data: { orgId: string; name: string; plan: Plan; createdAt: string };
};
/** An operator moved the organization to another plan (the CLI's `orgs set-plan`). */
export type OrganizationPlanChanged = {
  type: 'OrganizationPlanChanged';
  data: { orgId: string; plan: Plan; previousPlan: Plan; changedAt: string };
};

/**
 * An operator changed the organization's settings (the CLI's `orgs set-client-details`). `trackClientDetails`:
 * whether opens and clicks record the IP address and user agent (sealed; docs/emails.md).
 */
export type OrganizationSettingsChanged = {
  type: 'OrganizationSettingsChanged';
  data: { orgId: string; trackClientDetails: boolean; changedAt: string };
};

export type OrganizationEvent = OrganizationCreated | OrganizationPlanChanged | OrganizationSettingsChanged;

export const organizationStream = (orgId: string) => `org-${orgId}`;
