import type { Config } from '../../platform/config.ts';
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

/**
 * The records a new domain asks for. Required (the domain sends only when all are verified): DKIM, and SPF
 * plus MX on the return-path subdomain, which is the envelope sender so SPF aligns for DMARC and bounces come
 * back to Postline. Recommended: DMARC and the tracking CNAME. Inbound adds an MX on the domain itself.
 */
export function dnsRecordsFor(
  domain: { name: string; selector: string; publicKey: string; inboundEnabled: boolean },
  s: DnsSettings,
): DnsRecord[] {
  const returnPath = `${s.returnPathSubdomain}.${domain.name}`;
  const records: DnsRecord[] = [
    {
      type: 'TXT',
      name: `${domain.selector}._domainkey.${domain.name}`,
      value: dkimRecordValue(domain.publicKey),
      purpose: 'dkim',
      required: true,
      ...pending,
    },
    {
      type: 'TXT',
      name: returnPath,
      value: `v=spf1 ${spfMechanisms(s).join(' ')} ~all`,
      purpose: 'spf',
      required: true,
      ...pending,
    },
    {
      type: 'MX',
      name: returnPath,
      value: s.mxHost,
      priority: 10,
      purpose: 'return_path',
      required: true,
      ...pending,
    },
    {
      type: 'TXT',
      name: `_dmarc.${domain.name}`,
      value: 'v=DMARC1; p=none;',
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
  ];
  if (domain.inboundEnabled) records.push(inboundRecord(domain.name, s.mxHost));
  return records;
}

export const inboundRecord = (name: string, mxHost: string): DnsRecord => ({
  type: 'MX',
  name,
  value: mxHost,
  priority: 10,
  purpose: 'inbound',
  required: false,
  ...pending,
});
