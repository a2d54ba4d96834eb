/**
 * MTA-STS (RFC 8461): the `_mta-sts` TXT record, the policy file and which MX hosts a policy names. Pure: the
 * fetching and caching are in processes/delivery/mta-sts/.
 */

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  mode: StsMode;
  /** `mx:` patterns as written, lower case: a host name or `*.` and a parent domain (one label only). */
  mx: string[];
  /** Seconds the policy may be cached (RFC 8461 §3.2: at most 31557600). */
  maxAge: number;
  /** The policy text as served, for the TLS report's `policy-string`. */
  text: string;
}

/** RFC 8461 §3.2: max_age is at most a year. */
export const MAX_POLICY_AGE_S = 31_557_600;
/** RFC 8461 §3.3: a policy larger than this is not read. */
export const MAX_POLICY_BYTES = 64 * 1024;

const ID = /^[A-Za-z0-9]{1,32}$/;

/**
 * The policy id of a `_mta-sts` TXT record set (each record's strings joined), or null when there is not exactly
 * one record starting `v=STSv1` with a valid `id` (RFC 8461 §3.1: several, or none, mean no policy).
 */
export function parseStsRecord(records: string[][]): string | null {
  const sts = records.map((r) => r.join('')).filter((r) => /^v=STSv1\s*(;|$)/.test(r));
  if (sts.length !== 1) return null;
  const fields = new Map<string, string>();
  for (const part of sts[0].split(';')) {
    const m = part.trim().match(/^([A-Za-z0-9_.-]+)=(.*)$/);
    if (m) fields.set(m[1], m[2].trim());
  }
  const id = fields.get('id');
  return id !== undefined && ID.test(id) ? id : null;
}

/**
 * The policy file (RFC 8461 §3.2: `key: value` lines, CRLF or LF; `version: STSv1`, `mode`, `max_age` once each,
 * `mx` one or more unless mode is none; unknown keys ignored). An Error says why a policy is refused.
 */
export function parseStsPolicy(text: string): StsPolicy | Error {
  // PostgreSQL stores the text, which cannot hold NUL; no policy has one.
  if (text.includes('\0')) return new Error('the policy holds a NUL character');
  const values = new Map<string, string[]>();
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const m = line.match(/^([A-Za-z0-9_.-]+)[ \t]*:[ \t]*(.*?)[ \t]*$/);
    if (!m) return new Error(`malformed line: ${line.slice(0, 80)}`);
    values.set(m[1], [...(values.get(m[1]) ?? []), m[2]]);
  }
  const once = (key: string) => (values.get(key)?.length === 1 ? values.get(key)?.[0] : undefined);
  if (once('version') !== 'STSv1') return new Error('version must be STSv1, given once');
  const mode = once('mode');
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none')
    return new Error('mode must be enforce, testing or none, given once');
  const age = once('max_age');
  if (age === undefined || !/^\d{1,10}$/.test(age)) return new Error('max_age must be a number, given once');
  const mx = (values.get('mx') ?? []).map((p) => p.toLowerCase().replace(/\.$/, ''));
  if (mode !== 'none' && mx.length === 0) return new Error('a policy that is not none names its mx hosts');
  if (mx.some((p) => !validPattern(p))) return new Error('an mx pattern is not a host name or *.domain');
  return { mode, mx, maxAge: Math.min(Number(age), MAX_POLICY_AGE_S), text };
}

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

function validPattern(pattern: string): boolean {
  const name = pattern.startsWith('*.') ? pattern.slice(2) : pattern;
  return name.includes('.') && name.split('.').every((l) => LABEL.test(l));
}

/** RFC 8461 §4.1: a host matches a pattern exactly, or `*.example.com` matches one label before example.com. */
export function mxMatches(host: string, pattern: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!pattern.startsWith('*.')) return name === pattern;
  const dot = name.indexOf('.');
  return dot > 0 && name.slice(dot + 1) === pattern.slice(2);
}

/** Whether the policy names the host. */
export const policyNames = (policy: StsPolicy, host: string): boolean =>
  policy.mx.some((p) => mxMatches(host, p));
