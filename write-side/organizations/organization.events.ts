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

export type OrganizationEvent = OrganizationCreated | OrganizationPlanChanged;

export const organizationStream = (orgId: string) => `org-${orgId}`;
