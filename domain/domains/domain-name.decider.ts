import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { DomainNameEvent } from './domain.events.ts';

/**
 * The name rule (docs/domains.md): an organization has a name at most once per mode, counting soft-deleted
 * domains until they are purged; and once an organization has verified a name (proved it controls the DNS),
 * no other organization may add or verify it until that domain is deleted and purged. Unverified
 * registrations by several organizations may coexist: whoever verifies first holds the name.
 */
export type DomainNameCommand =
  | {
      type: 'RegisterDomainName';
      name: string;
      domainId: string;
      orgId: string;
      mode: Mode;
      /** Registrations whose domain stream was never written (a crash between the two appends): ignored and freed. */
      abandoned: string[];
      at: string;
    }
  | { type: 'ClaimDomainName'; name: string; domainId: string; orgId: string; mode: Mode; at: string }
  | { type: 'ReleaseDomainName'; name: string; domainId: string; at: string };

export interface DomainNameState {
  /** `since`: when the name was registered for that domain (or claimed). */
  registrations: Record<string, { orgId: string; mode: Mode; claimed: boolean; since: string }>;
}

const claimedByAnother = (state: DomainNameState, orgId: string) =>
  Object.values(state.registrations).some((r) => r.claimed && r.orgId !== orgId);

export const domainNameDecider: Decider<DomainNameCommand, DomainNameEvent, DomainNameState> = {
  initialState: { registrations: {} },

  evolve(state, event) {
    const registrations = { ...state.registrations };
    switch (event.type) {
      case 'DomainNameRegistered':
        registrations[event.data.domainId] = {
          orgId: event.data.orgId,
          mode: event.data.mode,
          claimed: false,
          since: event.data.registeredAt,
        };
        break;
      case 'DomainNameClaimed':
        registrations[event.data.domainId] = {
          orgId: event.data.orgId,
          mode: event.data.mode,
          claimed: true,
          since: registrations[event.data.domainId]?.since ?? event.data.claimedAt,
        };
        break;
      case 'DomainNameReleased':
        delete registrations[event.data.domainId];
        break;
    }
    return { registrations };
  },

  decide(command, state) {
    switch (command.type) {
      case 'RegisterDomainName': {
        // Registered already for this very domain: an earlier attempt of the same request (its id chosen under
        // an Idempotency-Key) got this far.
        if (state.registrations[command.domainId] && !command.abandoned.includes(command.domainId)) return [];
        const released: DomainNameEvent[] = command.abandoned
          .filter((id) => state.registrations[id])
          .map((domainId) => ({
            type: 'DomainNameReleased',
            data: { name: command.name, domainId, releasedAt: command.at },
          }));
        const live = Object.entries(state.registrations).filter(([id]) => !command.abandoned.includes(id));
        if (live.some(([, r]) => r.orgId === command.orgId && r.mode === command.mode)) {
          throw new AppError(
            'domain_exists',
            `This organization already has the domain ${command.name} (a deleted domain keeps its name until it is purged, 30 days after deletion).`,
          );
        }
        if (live.some(([, r]) => r.claimed && r.orgId !== command.orgId)) {
          throw new AppError(
            'domain_exists',
            `The domain ${command.name} is verified by another organization.`,
          );
        }
        const { type: _, abandoned: __, at, ...data } = command;
        return [...released, { type: 'DomainNameRegistered', data: { ...data, registeredAt: at } }];
      }

      case 'ClaimDomainName': {
        if (claimedByAnother(state, command.orgId)) {
          throw new AppError(
            'domain_exists',
            `The domain ${command.name} is verified by another organization.`,
          );
        }
        if (state.registrations[command.domainId]?.claimed) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'DomainNameClaimed', data: { ...data, claimedAt: at } }];
      }

      case 'ReleaseDomainName': {
        if (!state.registrations[command.domainId]) return [];
        return [
          {
            type: 'DomainNameReleased',
            data: { name: command.name, domainId: command.domainId, releasedAt: command.at },
          },
        ];
      }
    }
  },
};
