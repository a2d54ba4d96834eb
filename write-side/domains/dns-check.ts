import type { Resolver } from 'node:dns/promises';
import type { DnsRecord, RecordCheck } from '../../domain/domains/domain.events.ts';
import { isNoAnswer } from '../../platform/dns.ts';

const host = (h: string) => h.toLowerCase().replace(/\.$/, '');
const isSpf = (text: string) => /^v=spf1(\s|$)/i.test(text.trim());

/** `k=v; k=v` tags of a DKIM or DMARC record, keys lower-cased, whitespace inside values removed. */
function tags(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim().toLowerCase(), part.slice(i + 1).replace(/\s+/g, ''));
  }
  return out;
}

/**
 * Does what was found satisfy the record? Exact where it must be (the DKIM key, MX and CNAME targets);
 * lenient where users merge records: SPF needs Postline's mechanisms in the one SPF record (two SPF
 * records are an SPF error), DMARC only needs a DMARC record (the user chooses the policy).
 */
function matches(record: DnsRecord, found: string[]): boolean {
  // SPF records: the domain's own (`spf`) and the custom return path's (`return_path`, TXT).
  if (record.type === 'TXT' && isSpf(record.value)) {
    const spf = found.filter(isSpf);
    if (spf.length !== 1) return false;
    const have = new Set(spf[0].toLowerCase().split(/\s+/));
    return record.value
      .toLowerCase()
      .split(/\s+/)
      .filter((m) => m !== 'v=spf1' && !m.endsWith('all'))
      .every((m) => have.has(m));
  }
  switch (record.purpose) {
    case 'dkim': {
      const expected = tags(record.value).get('p');
      return found.some((t) => tags(t).get('p') === expected);
    }
    case 'dmarc':
      return found.some((t) => /^v=DMARC1\s*(;|$)/i.test(t.trim()));
    default:
      return found.some((f) => host(f.split(' ').at(-1) ?? '') === host(record.value));
  }
}

async function lookUp(resolver: Resolver, record: DnsRecord): Promise<string[]> {
  switch (record.type) {
    case 'TXT':
      return (await resolver.resolveTxt(record.name)).map((chunks) => chunks.join(''));
    case 'MX':
      return (await resolver.resolveMx(record.name)).map((mx) => `${mx.priority} ${mx.exchange}`);
    case 'CNAME':
      return await resolver.resolveCname(record.name);
  }
}

/** Looks every record up now. A missing name or type fails the record; a lookup error leaves it inconclusive. */
export async function checkDnsRecords(resolver: Resolver, records: DnsRecord[]): Promise<RecordCheck[]> {
  return Promise.all(
    records.map(async (record): Promise<RecordCheck> => {
      const key = { type: record.type, name: record.name, purpose: record.purpose };
      try {
        const found = await lookUp(resolver, record);
        return { ...key, outcome: matches(record, found) ? 'verified' : 'failed', found };
      } catch (error) {
        if (isNoAnswer(error)) return { ...key, outcome: 'failed', found: [] };
        return { ...key, outcome: 'inconclusive', found: [] };
      }
    }),
  );
}
