import type { Config } from '../../platform/config.ts';
import { dmarcReportAddress } from '../dmarc/dmarc-report.events.ts';
import type { DnsRecord } from './domain.events.ts';

/** Where the tracking CNAME lives on the customer's domain: `track.example.com`. */
export const TRACKING_LABEL = 'track';

export interface DnsSettings {
  spfInclude?: string;
  outboundIps: string[];
  mxHost: string;
  trackingHost: string;
  returnPathSubdomain: string;
}

export function dnsSettings(config: Config): DnsSettings {
  return {
    spfInclude: config.POSTLINE_SPF_INCLUDE,
    outboundIps: config.POSTLINE_OUTBOUND_IPS,
    mxHost: config.POSTLINE_MX_HOST,
    trackingHost: config.POSTLINE_TRACKING_HOST ?? new URL(config.PUBLIC_URL).hostname,
    returnPathSubdomain: config.POSTLINE_RETURN_PATH_SUBDOMAIN,
  };
}

/** The SPF mechanisms that authorise Postline's servers; without configuration, the MX host's address. */
export function spfMechanisms(s: DnsSettings): string[] {
  const mechanisms = [
    ...(s.spfInclude ? [`include:${s.spfInclude}`] : []),
    ...s.outboundIps.map((ip) => (ip.includes(':') ? `ip6:${ip}` : `ip4:${ip}`)),
  ];
  return mechanisms.length ? mechanisms : [`a:${s.mxHost}`];
}

const pending = { status: 'pending' as const, found: null };

export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;

/** Where a DKIM key's record lives: `<selector>._domainkey.<domain>`. */
export const dkimRecordName = (selector: string, domainName: string) =>
  `${selector}._domainkey.${domainName}`;

/**
 * A new key's record, listed while it waits to be published: not required (the key in use keeps signing and the
 * domain's status rests on it) until a DNS check finds it.
 */
export const pendingDkimRecord = (domainName: string, selector: string, value: string): DnsRecord => ({
  type: 'TXT',
  name: dkimRecordName(selector, domainName),
  value,
  purpose: 'dkim',
  required: false,
  status: 'pending',
  found: null,
  rotation: 'pending',
});

/**
 * The records a new domain asks for. Required (the domain sends live only when they are verified): DKIM, and
 * SPF on the domain itself. Recommended: DMARC and the tracking CNAME. Optional, the custom return path: an MX
 * and SPF on the return-path subdomain; until both verify, the envelope sender is on the installation's bounce
 * domain and DKIM alone aligns for DMARC. Inbound adds an MX on the domain itself.
 */
export function dnsRecordsFor(
  domain: { id: string; name: string; selector: string; publicKey: string; inboundEnabled: boolean },
  s: DnsSettings,
): DnsRecord[] {
  const returnPath = `${s.returnPathSubdomain}.${domain.name}`;
  const spf = `v=spf1 ${spfMechanisms(s).join(' ')} ~all`;
  const records: DnsRecord[] = [
    {
      type: 'TXT',
      name: dkimRecordName(domain.selector, domain.name),
      value: dkimRecordValue(domain.publicKey),
      purpose: 'dkim',
      required: true,
      ...pending,
    },
    { type: 'TXT', name: domain.name, value: spf, purpose: 'spf', required: true, ...pending },
    {
      type: 'TXT',
      name: `_dmarc.${domain.name}`,
      value: dmarcRecordValue(domain.id, s.mxHost, domain.inboundEnabled),
      purpose: 'dmarc',
      required: false,
      ...pending,
    },
    {
      type: 'CNAME',
      name: `${TRACKING_LABEL}.${domain.name}`,
      value: s.trackingHost,
      purpose: 'tracking',
      required: false,
      ...pending,
    },
    {
      type: 'MX',
      name: returnPath,
      value: s.mxHost,
      priority: 10,
      purpose: 'return_path',
      required: false,
      ...pending,
    },
    { type: 'TXT', name: returnPath, value: spf, purpose: 'return_path', required: false, ...pending },
  ];
  if (domain.inboundEnabled) records.push(inboundRecord(domain.name, s.mxHost));
  return records;
}

/**
 * The suggested DMARC record: `p=none` (monitoring); once inbound is set up (the MX takes mail for the installation),
 * its `rua` is the domain's report address there, so the domain's aggregate reports are read for it.
 */
export const dmarcRecordValue = (domainId: string, mxHost: string, inbound: boolean) =>
  inbound
    ? `v=DMARC1; p=none; rua=mailto:${dmarcReportAddress(domainId, mxHost.toLowerCase().replace(/\.$/, ''))}`
    : 'v=DMARC1; p=none;';

/** The records with the DMARC record's suggested value replaced (its check status stays: any DMARC1 passes). */
export const withDmarcValue = (records: DnsRecord[], value: string) =>
  records.map((r) => (r.purpose === 'dmarc' ? { ...r, value } : r));

export const inboundRecord = (name: string, mxHost: string): DnsRecord => ({
  type: 'MX',
  name,
  value: mxHost,
  priority: 10,
  purpose: 'inbound',
  required: false,
  ...pending,
});

/**
 * A domain's records under today's rules, whatever rules they were handed out under. Domains added before the
 * custom return path became optional were given SPF (purpose `spf`) and an MX on the return-path subdomain, both
 * required: both are now the optional custom return path. Records of today pass unchanged.
 */
export function currentRecords(domainName: string, records: DnsRecord[]): DnsRecord[] {
  if (!records.some((r) => isLegacyReturnPath(domainName, r))) return records;
  return records.map((r) =>
    isLegacyReturnPath(domainName, r) ? { ...r, purpose: 'return_path', required: false } : r,
  );
}

const isLegacyReturnPath = (domainName: string, r: DnsRecord) =>
  (r.purpose === 'spf' && r.name !== domainName) || (r.purpose === 'return_path' && r.required);

/** The custom return path is in use once all its records (the MX and the SPF on the subdomain) are verified. */
export function customReturnPathVerified(records: DnsRecord[]): boolean {
  const returnPath = records.filter((r) => r.purpose === 'return_path');
  return returnPath.length > 0 && returnPath.every((r) => r.status === 'verified');
}

/**
 * The installation's own bounce domain, `POSTLINE_MX_HOST`: the envelope sender of every domain without a
 * verified custom return path. The operator publishes an MX at it pointing to itself, and SPF for the sending
 * IPs (docs/domains.md).
 */
export const installationBounceDomain = (config: Pick<Config, 'POSTLINE_MX_HOST'>) =>
  config.POSTLINE_MX_HOST.toLowerCase().replace(/\.$/, '');

/** The envelope sender's domain for a sending domain: its custom return path once verified, else the installation's. */
export const envelopeDomain = (
  domain: { returnPathDomain: string; customReturnPath: boolean },
  config: Pick<Config, 'POSTLINE_MX_HOST'>,
) => (domain.customReturnPath ? domain.returnPathDomain.toLowerCase() : installationBounceDomain(config));
