import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Plan } from '../../platform/tenancy.ts';
import type { OrganizationEvent } from './organization.events.ts';

export type OrganizationCommand =
  | { type: 'CreateOrganization'; orgId: string; name: string; plan: Plan; at: string }
  | { type: 'ChangePlan'; orgId: string; plan: Plan; at: string }
  | { type: 'ChangeSettings'; orgId: string; trackClientDetails: boolean; at: string };

export type OrganizationState = { exists: false } | { exists: true; plan: Plan; trackClientDetails: boolean };

export const organizationDecider: Decider<OrganizationCommand, OrganizationEvent, OrganizationState> = {
  initialState: { exists: false },
  evolve: (state, event) => {
    switch (event.type) {
      case 'OrganizationCreated':
        return { exists: true, plan: event.data.plan, trackClientDetails: false };
      case 'OrganizationPlanChanged':
        return state.exists ? { ...state, plan: event.data.plan } : state;
      case 'OrganizationSettingsChanged':
        return state.exists ? { ...state, trackClientDetails: event.data.trackClientDetails } : state;
    }
    return state;
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateOrganization':
        if (state.exists) throw new AppError('conflict', `Organization ${command.orgId} already exists`);
        return [
          {
            type: 'OrganizationCreated',
            data: { orgId: command.orgId, name: command.name, plan: command.plan, createdAt: command.at },
          },
        ];
      case 'ChangePlan':
        if (!state.exists) throw new AppError('not_found', `Organization ${command.orgId} not found`);
        // Already on it: nothing to record (a retried command).
        if (state.plan === command.plan) return [];
        return [
          {
            type: 'OrganizationPlanChanged',
            data: {
              orgId: command.orgId,
              plan: command.plan,
              previousPlan: state.plan,
              changedAt: command.at,
            },
          },
        ];
      case 'ChangeSettings':
        if (!state.exists) throw new AppError('not_found', `Organization ${command.orgId} not found`);
        if (state.trackClientDetails === command.trackClientDetails) return [];
        return [
          {
            type: 'OrganizationSettingsChanged',
            data: {
              orgId: command.orgId,
              trackClientDetails: command.trackClientDetails,
              changedAt: command.at,
            },
          },
        ];
    }
  },
};
