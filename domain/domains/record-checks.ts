import { withoutRemovedRecords } from './dkim-rotation.ts';
import type { DnsRecord, DomainEvent, DomainStatus, RecordCheck } from './domain.events.ts';

/** A domain as a DNS check judges it: its records and status before the check. */
export interface CheckedDomain {
  domainId: string;
  name: string;
  status: DomainStatus;
  records: DnsRecord[];
}

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

/** What DNS answers for a record published as asked: MX answers carry their priority. */
export const answerFor = (r: DnsRecord) => (r.type === 'MX' ? `${r.priority ?? 10} ${r.value}` : r.value);

/**
 * The events of a check: the records' new statuses, the records that were verified and broke
 * (`DomainDnsChanged`), and `DomainVerified` when the domain becomes verified.
 */
export function checked(
  domain: CheckedDomain,
  checks: RecordCheck[],
  command: { trigger: 'manual' | 'periodic'; at: string },
  simulated = false,
): DomainEvent[] {
  const checkedRecords = applyChecks(domain.records, checks);
  const records = withoutRemovedRecords(checkedRecords);
  const status = domainStatus(records);
  const base = { domainId: domain.domainId, name: domain.name };
  const mark = simulated ? { simulated: true as const } : {};
  const events: DomainEvent[] = [
    {
      type: 'DomainVerificationChecked',
      data: { ...base, trigger: command.trigger, status, records, checkedAt: command.at, ...mark },
    },
  ];
  // An old DKIM record of a rotation may go: its going is no DNS change to report.
  const broken = checkedRecords.filter(
    (r, i) => domain.records[i].status === 'verified' && r.status === 'failed' && !r.rotation,
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
        ...mark,
      },
    });
  }
  if (status === 'verified' && domain.status !== 'verified') {
    events.push({ type: 'DomainVerified', data: { ...base, verifiedAt: command.at, ...mark } });
  }
  return events;
}
