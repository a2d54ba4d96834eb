import type { Migration } from '../../../platform/db/migrations.ts';

/**
 * MTA-STS and TLS reporting, shared by every worker process:
 * - `mta_sts_policies`: the last valid policy fetched per domain, in force until `expires_at` (RFC 8461 §5.1: a
 *   cached policy stays in force when a refresh fails or the TXT record goes away);
 * - `tls_report_counts`: sessions per UTC day, policy domain, policy, result and MX host (RFC 8460's summary);
 * - `tls_reports`: the daily report of each domain, claimed by one process, then marked sent.
 */
export const mtaStsMigrations: Migration[] = [
  {
    id: 'mta-sts-001',
    sql: `CREATE TABLE IF NOT EXISTS mta_sts_policies (
  domain text PRIMARY KEY,
  policy_id text NOT NULL,
  policy_text text NOT NULL,
  fetched_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS tls_report_counts (
  day date NOT NULL,
  domain text NOT NULL,
  policy_type text NOT NULL,
  policy_hash text NOT NULL,
  policy_text text NOT NULL,
  mx_patterns jsonb NOT NULL,
  result_type text NOT NULL,
  receiving_mx text NOT NULL,
  sessions bigint NOT NULL,
  PRIMARY KEY (day, domain, policy_type, policy_hash, result_type, receiving_mx)
);
CREATE TABLE IF NOT EXISTS tls_reports (
  day date NOT NULL,
  domain text NOT NULL,
  claimed_until timestamptz,
  sent_at timestamptz,
  attempts int NOT NULL DEFAULT 0,
  last_error text,
  PRIMARY KEY (day, domain)
)`,
  },
];
