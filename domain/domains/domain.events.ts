import type { Mode } from '../../platform/eventstore/types.ts';

export type DnsRecordType = 'TXT' | 'MX' | 'CNAME';
/**
 * `spf`: SPF on the domain itself. `return_path`: the optional custom return path on the bounce subdomain, an MX
 * (bounces come back to Postline) and SPF (it aligns with the domain for DMARC). `inbound`: the MX on the domain
 * itself (inbound mail). Domains added before the custom return path became optional carry its SPF as `spf`
 * and both records as required: `currentRecords()` (dns-records.ts) reads them as today's.
 */
export type DnsRecordPurpose = 'dkim' | 'spf' | 'return_path' | 'dmarc' | 'tracking' | 'inbound';
export type DnsRecordStatus = 'pending' | 'verified' | 'failed';
/** `pending` until first checked; then from the required records: all, some or none verified. */
export type DomainStatus = 'pending' | 'verified' | 'partially_verified' | 'failed';

/** One record the user publishes. `found` is what the last check saw at that name (null before any check). */
export interface DnsRecord {
  type: DnsRecordType;
  name: string;
  value: string;
  /** MX only. */
  priority?: number;
  purpose: DnsRecordPurpose;
  /** Required records decide whether the domain may send; the others are recommended or feature-specific. */
  required: boolean;
  status: DnsRecordStatus;
  found: string[] | null;
  /**
   * DKIM records of a key rotation only: `pending` the new key's record (not signing until it verifies),
   * `retiring` the old key's record, kept until `removableAfter` for mail signed with it still in flight,
   * `removable` the old record may be deleted from DNS (it leaves the list once a check finds it gone).
   */
  rotation?: 'pending' | 'retiring' | 'removable';
  removableAfter?: string;
}

export interface Impressum {
  company_name: string;
  address: string;
  country: string;
  email: string;
  phone?: string;
  representative?: string;
  register_entry?: string;
  vat_id?: string;
}

export interface DkimKey {
  selector: string;
  /** Base64 SubjectPublicKeyInfo (DER), the `p=` of the DNS record. */
  publicKey: string;
  /** PKCS#8 PEM sealed with POSTLINE_SECRET_KEY (services.secrets.open()); never in clear in an event. */
  sealedPrivateKey: string;
  createdAt: string;
}

/** Verification outcome of a single record. `inconclusive`: the lookup failed (timeout, SERVFAIL): status unchanged. */
export interface RecordCheck {
  type: DnsRecordType;
  name: string;
  purpose: DnsRecordPurpose;
  outcome: 'verified' | 'failed' | 'inconclusive';
  found: string[];
}

export type DomainEvent =
  | {
      type: 'DomainAdded';
      data: {
        domainId: string;
        orgId: string;
        mode: Mode;
        name: string;
        region: 'eu';
        openTracking: boolean;
        clickTracking: boolean;
        inboundEnabled: boolean;
        dkim: DkimKey;
        returnPathDomain: string;
        trackingDomain: string;
        records: DnsRecord[];
        addedAt: string;
      };
    }
  | {
      type: 'DomainVerificationChecked';
      data: {
        domainId: string;
        name: string;
        trigger: 'manual' | 'periodic';
        status: DomainStatus;
        records: DnsRecord[];
        checkedAt: string;
        /** A test-mode simulation: no DNS was looked up, every record got the simulated outcome. */
        simulated?: true;
      };
    }
  /** The domain became verified (first time, or again after a DNS change). Public: `domain.verified`. */
  | {
      type: 'DomainVerified';
      data: { domainId: string; name: string; verifiedAt: string; simulated?: true };
    }
  /** A record that was verified is gone or changed. Public: `domain.dns_changed`. `records`: the ones that broke. */
  | {
      type: 'DomainDnsChanged';
      data: {
        domainId: string;
        name: string;
        records: {
          type: DnsRecordType;
          name: string;
          purpose: DnsRecordPurpose;
          expected: string;
          found: string[];
        }[];
        /** Status after the change; anything but `verified` means live sending stops until re-verified. */
        status: DomainStatus;
        detectedAt: string;
        simulated?: true;
      };
    }
  | {
      type: 'DomainUpdated';
      data: {
        domainId: string;
        name: string;
        openTracking: boolean;
        clickTracking: boolean;
        inboundEnabled: boolean;
        impressum: Impressum | null;
        records: DnsRecord[];
        updatedAt: string;
      };
    }
  /** A new DKIM key under a new selector; its record is listed `pending`, the old key signs until it verifies. */
  | {
      type: 'DomainDkimRotationStarted';
      data: {
        domainId: string;
        name: string;
        trigger: 'manual' | 'scheduled';
        dkim: DkimKey;
        /** How long the old record stays listed after the switch (DKIM_RETIRE_AFTER_MS when started). */
        graceMs: number;
        records: DnsRecord[];
        startedAt: string;
      };
    }
  /** The new key's record verified: mail is signed with it from now; the old record is `retiring`. */
  | {
      type: 'DomainDkimKeyActivated';
      data: {
        domainId: string;
        name: string;
        selector: string;
        sealedPrivateKey: string;
        createdAt: string;
        previousSelector: string;
        removableAfter: string;
        records: DnsRecord[];
        activatedAt: string;
      };
    }
  /**
   * An Ed25519 key (RFC 8463) to sign beside the RSA key; its record is listed `pending` (not required) and it
   * signs nothing until the record verifies. `publicKey` is the raw 32-byte key, base64.
   */
  | {
      type: 'DomainDkimEd25519Added';
      data: { domainId: string; name: string; dkim: DkimKey; records: DnsRecord[]; addedAt: string };
    }
  /** The Ed25519 record verified: mail carries an Ed25519 signature beside the RSA one from now. */
  | {
      type: 'DomainDkimEd25519Activated';
      data: {
        domainId: string;
        name: string;
        selector: string;
        sealedPrivateKey: string;
        records: DnsRecord[];
        activatedAt: string;
      };
    }
  /** The grace period of old keys ended: their records may be deleted from DNS. */
  | {
      type: 'DomainDkimKeyRemovable';
      data: {
        domainId: string;
        name: string;
        selectors: string[];
        records: DnsRecord[];
        removableAt: string;
      };
    }
  | { type: 'DomainDeleted'; data: { domainId: string; name: string; deletedAt: string; purgeAfter: string } }
  | { type: 'DomainPurged'; data: { domainId: string; name: string; purgedAt: string } }
  /** A deleted domain taken back within its grace period: it is as it was before the deletion. */
  | { type: 'DomainRestored'; data: { domainId: string; name: string; restoredAt: string } };

export const domainStream = (domainId: string) => `domain-${domainId}`;

/**
 * Who holds a domain name, across organizations: a stream per (punycode) name. It serialises registrations of
 * the same name and records which organization has proved control of it by verifying.
 */
export type DomainNameEvent =
  | {
      type: 'DomainNameRegistered';
      data: { name: string; domainId: string; orgId: string; mode: Mode; registeredAt: string };
    }
  | {
      type: 'DomainNameClaimed';
      data: { name: string; domainId: string; orgId: string; mode: Mode; claimedAt: string };
    }
  | { type: 'DomainNameReleased'; data: { name: string; domainId: string; releasedAt: string } };

export const domainNameStream = (name: string) => `domainname-${name}`;

/** Soft-deleted domains are purged (and their name freed) after this grace period. */
export const DOMAIN_GRACE_PERIOD_MS = 30 * 24 * 3600_000;
