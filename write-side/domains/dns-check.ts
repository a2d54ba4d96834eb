import type { Resolver } from 'node:dns/promises';
import type { DnsRecord, RecordCheck } from '../../domain/domains/domain.events.ts';
import { isNoAnswer } from '../../platform/dns.ts';

const host = (h: string) => h.toLowerCase().replace(/\.$/, '');
const isSpf = (text: string) => /^v=spf1(\s|$)/i.test(text.trim());
/** An SPF record's `all` mechanism, with any qualifier: receivers evaluate nothing after it. */
const isAll = (term: string) => /^[+?~-]?all$/i.test(term);
const isDmarc = (text: string) => /^v=DMARC1\s*(;|$)/i.test(text.trim());
const DMARC_POLICIES = ['none', 'quarantine', 'reject'];

/**
 * The mechanisms of an SPF record that can authorise a server, lower case: those before its first `all`
 * (receivers never evaluate what follows it), with the default qualifier `+` dropped; `-`, `~` and `?` ones
 * authorise nothing.
 */
function passingMechanisms(spf: string): Set<string> {
  const out = new Set<string>();
  for (const term of spf.trim().toLowerCase().split(/\s+/).slice(1)) {
    if (isAll(term)) break;
    if (!/^[?~-]/.test(term)) out.add(term.replace(/^\+/, '').replace(/\.$/, ''));
  }
  return out;
}

/**
 * A DMARC record receivers apply: exactly one at the name (with two, they apply none), whose policy `p` is valid;
 * a record without one but with a `rua` counts as `p=none` (RFC 7489, 6.6.3).
 */
function validDmarc(found: string[]): boolean {
  const dmarc = found.filter(isDmarc);
  if (dmarc.length !== 1) return false;
  const t = tags(dmarc[0]);
  return DMARC_POLICIES.includes(t.get('p')?.toLowerCase() ?? '') || Boolean(t.get('rua'));
}

/** `k=v; k=v` tags of a DKIM or DMARC record, keys lower-cased, whitespace inside values removed. */
function tags(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim().toLowerCase(), part.slice(i + 1).replace(/\s+/g, ''));
  }
  return out;
}

/** RFC 7208's bound on the DNS look-ups of one SPF evaluation: receivers give up past it (permerror). */
const SPF_LOOK_UPS = 10;

/**
 * Does the domain's SPF authorise what Postline's record does? Its one SPF record (two are an SPF error) must
 * reach each of Postline's mechanisms before its `all`: written in it, or in a record it names by `include:` (or
 * `redirect=`, when it has no `all`), within the look-ups receivers make. A name that does not answer adds
 * nothing; any other look-up error is thrown (the record's check is inconclusive).
 */
async function spfAuthorises(resolver: Resolver, record: DnsRecord, found: string[]): Promise<boolean> {
  const spf = found.filter(isSpf);
  if (spf.length !== 1) return false;
  const wanted = [...passingMechanisms(record.value)];
  const have = new Set<string>();
  const reached = () => wanted.every((m) => have.has(m));
  let lookUps = 0;
  const visit = async (text: string): Promise<void> => {
    const own = passingMechanisms(text);
    for (const m of own) have.add(m);
    const all = text.trim().split(/\s+/).some(isAll);
    const redirect = all ? [] : [/(?:^|\s)redirect=(\S+)/i.exec(text)?.[1] ?? ''];
    const named = [
      ...[...own].filter((m) => m.startsWith('include:')).map((m) => m.slice('include:'.length)),
      ...redirect,
    ];
    // A name with macros (%{i}) depends on the sending address: it is not followed.
    for (const domain of named.filter((d) => d && !d.includes('%'))) {
      if (reached() || ++lookUps > SPF_LOOK_UPS) return;
      const records = await txt(resolver, domain).catch((error) => {
        if (isNoAnswer(error)) return [];
        throw error;
      });
      const next = records.filter(isSpf);
      if (next.length === 1) await visit(next[0]);
    }
  };
  await visit(spf[0]);
  return reached();
}

/**
 * Does what was found satisfy the record? Exact where it must be (the DKIM key, MX and CNAME targets);
 * lenient where users merge records: DMARC only needs one valid DMARC record (the user chooses the policy); SPF
 * is `spfAuthorises`.
 */
function matches(record: DnsRecord, found: string[]): boolean {
  switch (record.purpose) {
    case 'dkim': {
      const expected = tags(record.value).get('p');
      return found.some((t) => tags(t).get('p') === expected);
    }
    case 'dmarc':
      return validDmarc(found);
    default:
      return found.some((f) => host(f.split(' ').at(-1) ?? '') === host(record.value));
  }
}

const txt = async (resolver: Resolver, name: string) =>
  (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));

/** Parent domains asked for a DMARC record at most, as in DMARCbis's tree walk (a name of up to 7 labels first). */
const DMARC_WALK_LABELS = 7;

/**
 * The DMARC records that apply to `_dmarc.<domain>`: those at the name; for a subdomain without any DMARC record,
 * those of the nearest parent that has one (down to two labels), whose policy receivers apply to it instead
 * (RFC 7489 6.6.3). A parent's look-up error is an error of the whole look-up.
 */
async function dmarcLookUp(resolver: Resolver, name: string): Promise<string[]> {
  const own = await txt(resolver, name).catch((error) => {
    if (isNoAnswer(error)) return null;
    throw error;
  });
  if (own?.some(isDmarc)) return own;
  const labels = name.split('.').slice(1);
  for (let n = Math.min(labels.length - 1, DMARC_WALK_LABELS); n >= 2; n--) {
    const found = await txt(resolver, `_dmarc.${labels.slice(-n).join('.')}`).catch((error) => {
      if (isNoAnswer(error)) return [];
      throw error;
    });
    if (found.some(isDmarc)) return found;
  }
  return own ?? [];
}

async function lookUp(resolver: Resolver, record: DnsRecord): Promise<string[]> {
  switch (record.type) {
    case 'TXT':
      if (record.purpose === 'dmarc') return dmarcLookUp(resolver, record.name);
      return txt(resolver, record.name);
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
        // SPF records: the domain's own (`spf`) and the custom return path's (`return_path`, TXT).
        const ok =
          record.type === 'TXT' && isSpf(record.value)
            ? await spfAuthorises(resolver, record, found)
            : matches(record, found);
        return { ...key, outcome: ok ? 'verified' : 'failed', found };
      } catch (error) {
        if (isNoAnswer(error)) return { ...key, outcome: 'failed', found: [] };
        return { ...key, outcome: 'inconclusive', found: [] };
      }
    }),
  );
}
