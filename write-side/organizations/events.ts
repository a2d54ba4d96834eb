import type { Plan } from '../../platform/http/auth-context.ts';

export type OrganizationEvent = {
  type: 'OrganizationCreated';
  data: { orgId: string; name: string; plan: Plan; createdAt: string };
};

export const organizationStream = (orgId: string) => `org-${orgId}`;
