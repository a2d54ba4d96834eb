import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

/** One DNS record to publish, with what the last check found (`toApiDomain` in domains.queries.ts). */
const DnsRecord = z.strictObject({
  type: z.enum(['TXT', 'MX', 'CNAME']),
  name: z.string(),
  value: z.string(),
  priority: z.int().optional().meta({ description: 'MX records only.' }),
  purpose: z.enum(['dkim', 'spf', 'return_path', 'dmarc', 'tracking', 'inbound']).meta({
    description:
      'What the record is for: `dkim` the signing key; `spf` SPF on the domain itself; `dmarc` the DMARC policy; ' +
      '`tracking` the tracking CNAME; `return_path` the optional custom return path on the bounce subdomain (its ' +
      'MX brings bounces back, its SPF aligns the envelope sender); `inbound` the MX for inbound mail.',
  }),
  required: z.boolean().meta({
    description:
      'Required records (DKIM and SPF) make the domain `verified` and able to send live; the others are ' +
      'recommended or optional.',
  }),
  status: z.enum(['pending', 'verified', 'failed']),
  found: z.array(z.string()).nullable(),
  rotation: z
    .enum(['pending', 'retiring', 'removable'])
    .optional()
    .meta({
      description:
        'DKIM records of a key rotation: `pending` the new key (it signs once this record verifies), `retiring` ' +
        'the old key, kept for mail in flight until `removable_after`, `removable` the old record may be deleted.',
    }),
  removable_after: timestamp.optional(),
});

/** A DKIM key of the domain, from its DKIM records. */
const DkimKey = z.strictObject({
  selector: z.string(),
  algorithm: z.enum(['rsa', 'ed25519']),
  status: z.enum(['active', 'pending', 'retiring', 'removable']),
  signing: z
    .boolean()
    .meta({ description: 'Mail is signed with this key now (RSA, and Ed25519 beside it).' }),
  removable_after: timestamp.nullable(),
});

/** The legal notice printed in broadcast footers, as stored (see `impressumSchema` for what a request may give). */
const Impressum = z.strictObject({
  company_name: z.string(),
  address: z.string(),
  country: z.string(),
  email: z.string(),
  phone: z.string().optional(),
  representative: z.string().optional(),
  register_entry: z.string().optional(),
  vat_id: z.string().optional(),
});

export const Domain = z
  .strictObject({
    object: z.literal('domain'),
    id: z.string(),
    name: z.string(),
    status: z.enum(['pending', 'verified', 'partially_verified', 'failed']),
    region: z.string(),
    open_tracking: z.boolean(),
    click_tracking: z.boolean(),
    inbound_enabled: z.boolean(),
    dns_records: z.array(DnsRecord),
    dkim_keys: z.array(DkimKey),
    impressum: Impressum.nullable(),
    created_at: timestamp,
    verified_at: timestamp.nullable(),
    last_checked_at: timestamp.nullable(),
  })
  .meta({
    id: 'Domain',
    example: {
      object: 'domain',
      id: 'dom_01jx0m4qk3f5b8c9d2e6g7h8j9',
      name: 'acme.example',
      status: 'pending',
      region: 'eu',
      open_tracking: false,
      click_tracking: false,
      inbound_enabled: false,
      dns_records: [
        {
          type: 'TXT',
          name: 'postline._domainkey.acme.example',
          value: 'v=DKIM1; k=rsa; p=MIIBIjANBg…',
          purpose: 'dkim',
          required: true,
          status: 'pending',
          found: null,
        },
      ],
      dkim_keys: [
        { selector: 'postline', algorithm: 'rsa', status: 'active', signing: true, removable_after: null },
      ],
      impressum: null,
      created_at: '2026-01-15T09:30:00.000Z',
      verified_at: null,
      last_checked_at: null,
    },
  });

export const DomainList = listOf(Domain, 'DomainList');
