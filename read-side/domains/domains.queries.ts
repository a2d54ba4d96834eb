import { domainToASCII } from 'node:url';
import type { Selectable } from 'kysely';
import { customReturnPathVerified } from '../../domain/domains/dns-records.ts';
import type { DomainStatus, Impressum } from '../../domain/domains/domain.events.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows, readModels } from '../read-models.ts';
import type { DomainsTable } from './domains.schema.ts';

/** A row of `domains` as read. */
export type DomainRow = Selectable<DomainsTable>;

/** What a sender needs to sign and send from a domain. `canSendLive`: verified, DNS still fine, not deleted. */
export interface SendingDomain {
  id: string;
  name: string;
  status: DomainStatus;
  canSendLive: boolean;
  dkimSelector: string;
  /** Open with services.secrets.open() to get the PKCS#8 PEM private key. */
  sealedDkimPrivateKey: string;
  /** The custom return path, e.g. `bounces.example.com`: the envelope sender's domain once `customReturnPath`. */
  returnPathDomain: string;
  /** The custom return path's records are verified; until then the installation's bounce domain is used. */
  customReturnPath: boolean;
  /** Host of tracking links, e.g. `track.example.com` (a CNAME to POSTLINE_TRACKING_HOST). */
  trackingDomain: string;
  openTracking: boolean;
  clickTracking: boolean;
  /** The legal notice broadcast footers print. */
  impressum: Impressum | null;
}

const active = (db: Database) =>
  readModels(db).selectFrom('domains').selectAll().where('deleted_at', 'is', null);
const live = (db: Database, tenant: Tenant) => liveRows(db, 'domains', tenant).selectAll();

/**
 * The domain's DKIM keys, read from its DKIM records: those signing (`active`: RSA, and Ed25519 beside it), a rotation's new one until its
 * record verifies (`pending`), old ones kept for mail in flight (`retiring`) and those whose record may go
 * (`removable`).
 */
function dkimKeys(row: DomainRow) {
  return row.dns_records
    .filter((r) => r.purpose === 'dkim')
    .map((r) => ({
      selector: r.name.slice(0, r.name.indexOf('._domainkey.')),
      algorithm: /\bk=ed25519\b/.test(r.value) ? ('ed25519' as const) : ('rsa' as const),
      status: r.rotation ?? ('active' as const),
      signing: [row.dkim_selector, row.ed25519_dkim_selector].some((s) =>
        r.name.startsWith(`${s}._domainkey.`),
      ),
      removable_after: r.removableAfter ?? null,
    }));
}

/** The public Domain resource. */
export function toApiDomain(row: DomainRow) {
  return {
    object: 'domain',
    id: row.id,
    name: row.name,
    status: row.status,
    region: row.region,
    open_tracking: row.open_tracking,
    click_tracking: row.click_tracking,
    inbound_enabled: row.inbound_enabled,
    dns_records: row.dns_records.map((r) => ({
      type: r.type,
      name: r.name,
      value: r.value,
      ...(r.priority !== undefined ? { priority: r.priority } : {}),
      purpose: r.purpose,
      required: r.required,
      status: r.status,
      found: r.found,
      ...(r.rotation && { rotation: r.rotation }),
      ...(r.removableAfter && { removable_after: r.removableAfter }),
    })),
    dkim_keys: dkimKeys(row),
    impressum: row.impressum,
    created_at: iso(row.created_at),
    verified_at: iso(row.verified_at),
    last_checked_at: iso(row.last_checked_at),
  };
}

/** A domain of this organization and mode that is not deleted, or null. */
export async function findDomainById(
  db: Database,
  tenant: Tenant,
  domainId: string,
): Promise<DomainRow | null> {
  return (await live(db, tenant).where('id', '=', domainId).executeTakeFirst()) ?? null;
}

/** The domain as `GET /v1/domains/{id}` answers it, or null. */
export async function findApiDomain(db: Database, tenant: Tenant, domainId: string) {
  const row = await findDomainById(db, tenant, domainId);
  return row && toApiDomain(row);
}

export async function listDomains(db: Database, tenant: Tenant, page: PageParams) {
  return listPage(live(db, tenant), page, (rows) => rows.map(toApiDomain));
}

/** The sending domain for a From address's domain (any case, Unicode or punycode), or null. */
export async function findSendingDomain(
  db: Database,
  tenant: Tenant,
  name: string,
): Promise<SendingDomain | null> {
  const ascii = domainToASCII(name.trim().toLowerCase().replace(/\.$/, ''));
  if (!ascii) return null;
  const row = await live(db, tenant).where('name', '=', ascii).executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    canSendLive: row.status === 'verified',
    dkimSelector: row.dkim_selector,
    sealedDkimPrivateKey: row.sealed_dkim_private_key,
    returnPathDomain: row.return_path_domain,
    customReturnPath: customReturnPathVerified(row.dns_records),
    trackingDomain: row.tracking_domain,
    openTracking: row.open_tracking,
    clickTracking: row.click_tracking,
    impressum: row.impressum,
  };
}

/**
 * Domains (any organization and mode) that asked for inbound mail under this name. The MX accepts mail only
 * for one whose `inboundVerified` is true: its inbound MX record pointed at Postline at the last check.
 */
export async function findInboundDomains(db: Database, name: string) {
  const rows = await active(db)
    .where('name', '=', domainToASCII(name.toLowerCase().replace(/\.$/, '')))
    .where('inbound_enabled', '=', true)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    mode: r.mode,
    name: r.name,
    inboundVerified: r.dns_records.some((d) => d.purpose === 'inbound' && d.status === 'verified'),
  }));
}

/**
 * Domains whose last DNS check is older than `before` (or that were never checked), oldest first. A domain whose
 * name another organization's domain holds (verified over DNS, deleted or not, until purged) cannot verify: its
 * check would be refused and, never recorded, would come first again on every run, crowding out the rest. It is
 * left out. The hold outlasts the holder's DNS: a live domain that was ever verified holds its name (live domains
 * verify over DNS only), a test-mode one while verified over DNS (its `verified_at` may come from a simulation,
 * which holds no name). The same organization's domain of that name in the other mode holds it for both (as the
 * name's claim does), so each is checked.
 */
export async function domainsDueForCheck(db: Database, before: Date, limit: number) {
  return readModels(db)
    .selectFrom('domains as d')
    .select(['d.id', 'd.org_id', 'd.mode'])
    .where('d.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('d.last_checked_at', 'is', null), eb('d.last_checked_at', '<', before)]))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('domains as holder')
            .select('holder.id')
            .whereRef('holder.name', '=', 'd.name')
            .whereRef('holder.org_id', '<>', 'd.org_id')
            .where('holder.simulated', '=', false)
            .where((h) =>
              h.or([
                h('holder.status', '=', 'verified'),
                h.and([h('holder.mode', '=', 'live'), h('holder.verified_at', 'is not', null)]),
              ]),
            ),
        ),
      ),
    )
    .orderBy('d.last_checked_at', (ob) => ob.asc().nullsFirst())
    .limit(limit)
    .execute();
}

/** Soft-deleted domains whose grace period has ended. */
export async function domainsDueForPurge(db: Database, now: Date, limit: number) {
  return readModels(db)
    .selectFrom('domains')
    .select(['id', 'name', 'org_id', 'mode'])
    .where('deleted_at', 'is not', null)
    .where('purge_after', '<=', now)
    .orderBy('purge_after')
    .limit(limit)
    .execute();
}
