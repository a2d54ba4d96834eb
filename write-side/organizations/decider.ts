import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Plan } from '../../platform/http/auth-context.ts';
import type { OrganizationEvent } from './events.ts';

export type CreateOrganization = {
  type: 'CreateOrganization';
  orgId: string;
  name: string;
  plan: Plan;
  at: string;
};
export type OrganizationState = { exists: boolean };

export const organizationDecider: Decider<CreateOrganization, OrganizationEvent, OrganizationState> = {
  initialState: { exists: false },
  evolve: (_state, event) => (event.type === 'OrganizationCreated' ? { exists: true } : _state),
  decide(command, state) {
    if (state.exists) throw new AppError('conflict', `Organization ${command.orgId} already exists`);
    return [
      {
        type: 'OrganizationCreated',
        data: { orgId: command.orgId, name: command.name, plan: command.plan, createdAt: command.at },
      },
    ];
  },
};
