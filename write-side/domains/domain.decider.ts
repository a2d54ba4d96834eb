import { AppError, notFound, visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import { inboundRecord } from './dns-records.ts';
import type { DnsRecord, DomainEvent, DomainStatus, Impressum, RecordCheck } from './domain.events.ts';

export type DomainCommand =
  | ({ type: 'AddDomain'; at: string } & Omit<
      Extract<DomainEvent, { type: 'DomainAdded' }>['data'],
      'addedAt' | 'region'
    >)
  /** The result of DNS look-ups done outside (commands.ts); the decider only judges them. */
  | {
      type: 'RecordDnsCheck';
      domainId: string;
      orgId: string;
      mode: Mode;
      trigger: 'manual' | 'periodic';
      checks: RecordCheck[];
      at: string;
    }
  | {
      type: 'UpdateDomain';
      domainId: string;
      orgId: string;
      mode: Mode;
      openTracking?: boolean;
      clickTracking?: boolean;
      inboundEnabled?: boolean;
      /** undefined: unchanged; null: removed. */
      impressum?: Impressum | null;
      /** Target of the MX record added when inbound gets enabled (POSTLINE_MX_HOST). */
      inboundMxHost: string;
      at: string;
    }
  | { type: 'DeleteDomain'; domainId: string; orgId: string; mode: Mode; at: string; purgeAfter: string }
  | { type: 'PurgeDomain'; domainId: string; at: string }
  | { type: 'RestoreDomain'; domainId: string; orgId: string; mode: Mode; at: string };

export type DomainState =
  | { exists: false }
  | {
      exists: true;
      domainId: string;
      orgId: string;
      mode: Mode;
      name: string;
      status: DomainStatus;
      records: DnsRecord[];
      openTracking: boolean;
      clickTracking: boolean;
      inboundEnabled: boolean;
      impressum: Impressum | null;
      deleted: boolean;
      purgeAfter: string | null;
      purged: boolean;
    };

type Existing = Extract<DomainState, { exists: true }>;

/** Status from the required records: all verified, some verified, any failed, else still pending. */
export function domainStatus(records: DnsRecord[]): DomainStatus {
  const required = records.filter((r) => r.required);
  if (required.every((r) => r.status === 'verified')) return 'verified';
  if (required.some((r) => r.status === 'verified')) return 'partially_verified';
  if (required.some((r) => r.status === 'failed')) return 'failed';
  return 'pending';
}

const sameRecord = (
  a: Pick<DnsRecord, 'type' | 'name' | 'purpose'>,
  b: Pick<DnsRecord, 'type' | 'name' | 'purpose'>,
) => a.type === b.type && a.name === b.name && a.purpose === b.purpose;

function applyChecks(records: DnsRecord[], checks: RecordCheck[]): DnsRecord[] {
  return records.map((r) => {
    const check = checks.find((c) => sameRecord(c, r));
    if (!check || check.outcome === 'inconclusive') return r;
    return { ...r, status: check.outcome, found: check.found };
  });
}

const visible = (state: DomainState, command: { domainId: string; orgId: string; mode: Mode }): Existing =>
  visibleTo(state, command, 'Domain', command.domainId);

export const domainDecider: Decider<DomainCommand, DomainEvent, DomainState> = {
  initialState: { exists: false },

  evolve(state, event) {
    if (event.type === 'DomainAdded') {
      const d = event.data;
      return {
        exists: true,
        domainId: d.domainId,
        orgId: d.orgId,
        mode: d.mode,
        name: d.name,
        status: 'pending',
        records: d.records,
        openTracking: d.openTracking,
        clickTracking: d.clickTracking,
        inboundEnabled: d.inboundEnabled,
        impressum: null,
        deleted: false,
        purgeAfter: null,
        purged: false,
      };
    }
    if (!state.exists) return state;
    switch (event.type) {
      case 'DomainVerificationChecked':
        return { ...state, status: event.data.status, records: event.data.records };
      case 'DomainUpdated': {
        const { openTracking, clickTracking, inboundEnabled, impressum, records } = event.data;
        return { ...state, openTracking, clickTracking, inboundEnabled, impressum, records };
      }
      case 'DomainDeleted':
        return { ...state, deleted: true, purgeAfter: event.data.purgeAfter };
      case 'DomainPurged':
        return { ...state, purged: true };
      case 'DomainRestored':
        return { ...state, deleted: false, purgeAfter: null };
      default:
        return state;
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'AddDomain': {
        if (state.exists) throw new AppError('conflict', `Domain ${command.domainId} already exists`);
        const { type: _, at, ...data } = command;
        return [{ type: 'DomainAdded', data: { ...data, region: 'eu', addedAt: at } }];
      }

      case 'RecordDnsCheck': {
        const domain = visible(state, command);
        const records = applyChecks(domain.records, command.checks);
        const status = domainStatus(records);
        const base = { domainId: domain.domainId, name: domain.name };
        const events: DomainEvent[] = [
          {
            type: 'DomainVerificationChecked',
            data: { ...base, trigger: command.trigger, status, records, checkedAt: command.at },
          },
        ];
        const broken = records.filter(
          (r, i) => domain.records[i].status === 'verified' && r.status === 'failed',
        );
        if (broken.length > 0) {
          events.push({
            type: 'DomainDnsChanged',
            data: {
              ...base,
              records: broken.map((r) => ({
                type: r.type,
                name: r.name,
                purpose: r.purpose,
                expected: r.value,
                found: r.found ?? [],
              })),
              status,
              detectedAt: command.at,
            },
          });
        }
        if (status === 'verified' && domain.status !== 'verified') {
          events.push({ type: 'DomainVerified', data: { ...base, verifiedAt: command.at } });
        }
        return events;
      }

      case 'UpdateDomain': {
        const domain = visible(state, command);
        const next = {
          openTracking: command.openTracking ?? domain.openTracking,
          clickTracking: command.clickTracking ?? domain.clickTracking,
          inboundEnabled: command.inboundEnabled ?? domain.inboundEnabled,
          impressum: command.impressum === undefined ? domain.impressum : command.impressum,
        };
        let records = domain.records;
        if (next.inboundEnabled && !domain.inboundEnabled)
          records = [...records, inboundRecord(domain.name, command.inboundMxHost)];
        if (!next.inboundEnabled && domain.inboundEnabled)
          records = records.filter((r) => r.purpose !== 'inbound');
        const unchanged =
          records === domain.records &&
          next.openTracking === domain.openTracking &&
          next.clickTracking === domain.clickTracking &&
          JSON.stringify(next.impressum) === JSON.stringify(domain.impressum);
        if (unchanged) return [];
        return [
          {
            type: 'DomainUpdated',
            data: { domainId: domain.domainId, name: domain.name, ...next, records, updatedAt: command.at },
          },
        ];
      }

      case 'DeleteDomain': {
        const domain = visible(state, command);
        return [
          {
            type: 'DomainDeleted',
            data: {
              domainId: domain.domainId,
              name: domain.name,
              deletedAt: command.at,
              purgeAfter: command.purgeAfter,
            },
          },
        ];
      }

      case 'RestoreDomain': {
        // Another organization's or mode's, or purged: not found, as for every other command.
        if (!state.exists || state.purged || state.orgId !== command.orgId || state.mode !== command.mode) {
          throw notFound('Domain', command.domainId);
        }
        if (!state.deleted) throw new AppError('conflict', `Domain ${command.domainId} is not deleted`);
        if (state.purgeAfter && command.at >= state.purgeAfter) {
          throw notFound('Domain', command.domainId);
        }
        return [
          {
            type: 'DomainRestored',
            data: { domainId: state.domainId, name: state.name, restoredAt: command.at },
          },
        ];
      }

      case 'PurgeDomain': {
        if (!state.exists) throw notFound('Domain', command.domainId);
        if (state.purged) return [];
        if (!state.deleted || !state.purgeAfter || command.at < state.purgeAfter) {
          throw new AppError('conflict', `Domain ${command.domainId} is not due for purging`);
        }
        return [
          {
            type: 'DomainPurged',
            data: { domainId: state.domainId, name: state.name, purgedAt: command.at },
          },
        ];
      }
    }
  },
};
