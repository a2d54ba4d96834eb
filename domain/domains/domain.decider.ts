import { AppError, notFound, visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import { addEd25519, type Ed25519Keys, ed25519AfterCheck } from './dkim-ed25519.ts';
import { type DkimKeys, evolveKeys, rotationAfterCheck, startRotation } from './dkim-rotation.ts';
import { currentRecords, dmarcRecordValue, inboundRecord, withDmarcValue } from './dns-records.ts';
import type {
  DkimKey,
  DnsRecord,
  DomainEvent,
  DomainStatus,
  Impressum,
  RecordCheck,
} from './domain.events.ts';
import { answerFor, checked } from './record-checks.ts';

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
  /**
   * Test mode only: a check that looks nothing up and gives every record the outcome asked for, so a sandbox
   * domain can become `verified` (or lose it) without publishing records. Its events say `simulated: true`.
   */
  | {
      type: 'SimulateDnsCheck';
      domainId: string;
      orgId: string;
      mode: Mode;
      trigger: 'manual' | 'periodic';
      outcome: Simulation;
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
  /** A new DKIM key, generated outside; `graceMs`: how long the old record stays listed after the switch. */
  | {
      type: 'RotateDkim';
      domainId: string;
      orgId: string;
      mode: Mode;
      trigger: 'manual' | 'scheduled';
      dkim: DkimKey;
      graceMs: number;
      at: string;
    }
  /** An Ed25519 key, generated outside, to sign beside RSA once its record verifies. */
  | { type: 'AddEd25519Dkim'; domainId: string; orgId: string; mode: Mode; dkim: DkimKey; at: string }
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
      dkim: DkimKeys;
      ed25519: Ed25519Keys;
      /** The outcome the last check simulated; null when it looked the records up over DNS. */
      simulation: Simulation | null;
      openTracking: boolean;
      clickTracking: boolean;
      inboundEnabled: boolean;
      impressum: Impressum | null;
      deleted: boolean;
      purgeAfter: string | null;
      purged: boolean;
    };

type Existing = Extract<DomainState, { exists: true }>;

/** What a test-mode simulation may make of a domain's records. */
export type Simulation = 'verified' | 'failed';

const visible = (state: DomainState, command: { domainId: string; orgId: string; mode: Mode }): Existing =>
  visibleTo(state, command, 'Domain', command.domainId);

type Command<T extends DomainCommand['type']> = Extract<DomainCommand, { type: T }>;

function addDomain(command: Command<'AddDomain'>, state: DomainState): DomainEvent[] {
  if (state.exists) throw new AppError('conflict', `Domain ${command.domainId} already exists`);
  const { type: _, at, ...data } = command;
  return [{ type: 'DomainAdded', data: { ...data, region: 'eu', addedAt: at } }];
}

function simulateDnsCheck(command: Command<'SimulateDnsCheck'>, domain: Existing): DomainEvent[] {
  if (domain.mode !== 'test')
    throw new AppError(
      'test_mode_only',
      'Only test-mode domains (pk_test_ keys) can simulate verification; a live domain verifies over DNS.',
    );
  const checks = domain.records.map(
    (r): RecordCheck => ({
      type: r.type,
      name: r.name,
      purpose: r.purpose,
      outcome: command.outcome,
      found: command.outcome === 'verified' ? [answerFor(r)] : [],
    }),
  );
  return withRotation(domain, checked(domain, checks, command, true), command.at);
}

/** A check's events, then what its records mean for a DKIM rotation in progress (dkim-rotation.ts). */
function withRotation(domain: Existing, events: DomainEvent[], at: string): DomainEvent[] {
  const check = events.find((e) => e.type === 'DomainVerificationChecked');
  if (!check) return events;
  const rotation = rotationAfterCheck(domain, check.data.records, at);
  return [...events, ...rotation.events, ...ed25519AfterCheck(domain, rotation.records, at)];
}

function updateDomain(command: Command<'UpdateDomain'>, domain: Existing): DomainEvent[] {
  const next = {
    openTracking: command.openTracking ?? domain.openTracking,
    clickTracking: command.clickTracking ?? domain.clickTracking,
    inboundEnabled: command.inboundEnabled ?? domain.inboundEnabled,
    impressum: command.impressum === undefined ? domain.impressum : command.impressum,
  };
  let records = domain.records;
  if (next.inboundEnabled && !domain.inboundEnabled)
    records = [...records, inboundRecord(domain.name, command.inboundMxHost)];
  if (!next.inboundEnabled && domain.inboundEnabled) records = records.filter((r) => r.purpose !== 'inbound');
  if (next.inboundEnabled !== domain.inboundEnabled)
    records = withDmarcValue(
      records,
      dmarcRecordValue(domain.domainId, command.inboundMxHost, next.inboundEnabled),
    );
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

function deleteDomain(command: Command<'DeleteDomain'>, domain: Existing): DomainEvent[] {
  const { domainId, name } = domain;
  return [
    {
      type: 'DomainDeleted',
      data: { domainId, name, deletedAt: command.at, purgeAfter: command.purgeAfter },
    },
  ];
}

function restoreDomain(command: Command<'RestoreDomain'>, state: DomainState): DomainEvent[] {
  // Another organization's or mode's, or purged: not found, as for every other command.
  if (!state.exists || state.purged || state.orgId !== command.orgId || state.mode !== command.mode) {
    throw notFound('Domain', command.domainId);
  }
  if (!state.deleted) throw new AppError('conflict', `Domain ${command.domainId} is not deleted`);
  if (state.purgeAfter && command.at >= state.purgeAfter) {
    throw notFound('Domain', command.domainId);
  }
  return [
    { type: 'DomainRestored', data: { domainId: state.domainId, name: state.name, restoredAt: command.at } },
  ];
}

function purgeDomain(command: Command<'PurgeDomain'>, state: DomainState): DomainEvent[] {
  if (!state.exists) throw notFound('Domain', command.domainId);
  if (state.purged) return [];
  if (!state.deleted || !state.purgeAfter || command.at < state.purgeAfter) {
    throw new AppError('conflict', `Domain ${command.domainId} is not due for purging`);
  }
  return [
    { type: 'DomainPurged', data: { domainId: state.domainId, name: state.name, purgedAt: command.at } },
  ];
}

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
        records: currentRecords(d.name, d.records),
        dkim: { active: { selector: d.dkim.selector, createdAt: d.dkim.createdAt }, pending: null },
        ed25519: { active: null, pending: null },
        simulation: null,
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
      case 'DomainVerificationChecked': {
        const { status, records, simulated } = event.data;
        const simulation = simulated ? (status === 'verified' ? 'verified' : 'failed') : null;
        return { ...state, status, records: currentRecords(state.name, records), simulation };
      }
      case 'DomainUpdated': {
        const { openTracking, clickTracking, inboundEnabled, impressum } = event.data;
        const records = currentRecords(state.name, event.data.records);
        return { ...state, openTracking, clickTracking, inboundEnabled, impressum, records };
      }
      case 'DomainDeleted':
        return { ...state, deleted: true, purgeAfter: event.data.purgeAfter };
      case 'DomainPurged':
        return { ...state, purged: true };
      case 'DomainRestored':
        return { ...state, deleted: false, purgeAfter: null };
      default: {
        const keys = evolveKeys(state, event);
        return keys ? { ...state, ...keys } : state;
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'AddDomain':
        return addDomain(command, state);
      case 'RecordDnsCheck':
        return withRotation(
          visible(state, command),
          checked(visible(state, command), command.checks, command),
          command.at,
        );
      case 'RotateDkim':
        return startRotation(visible(state, command), command);
      case 'AddEd25519Dkim':
        return addEd25519(visible(state, command), command);
      case 'SimulateDnsCheck':
        return simulateDnsCheck(command, visible(state, command));
      case 'UpdateDomain':
        return updateDomain(command, visible(state, command));
      case 'DeleteDomain':
        return deleteDomain(command, visible(state, command));
      case 'RestoreDomain':
        return restoreDomain(command, state);
      case 'PurgeDomain':
        return purgeDomain(command, state);
    }
  },
};
