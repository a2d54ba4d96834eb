import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Timestamp } from '../column-types.ts';

/** One source IP of a report: its messages and how many of them passed. */
export interface DmarcReportSourcesTable {
  /** `<report row id>|<ip>`. */
  id: string;
  report_row_id: string;
  org_id: string;
  mode: Mode;
  domain_id: string;
  day: string;
  ip: string;
  messages: number;
  dmarc_pass: number;
  dkim_aligned: number;
  spf_aligned: number;
}

/** One received aggregate report with its counts; its sources are rows of `dmarc_report_sources`. */
export interface DmarcReportsTable {
  /** `<domain id>|<reporter>|<report id>`: one row however often the report arrives. */
  id: string;
  org_id: string;
  mode: Mode;
  domain_id: string;
  reporter: string;
  reporter_email: string;
  report_id: string;
  /** The UTC day the report's range begins on, `YYYY-MM-DD`. */
  day: string;
  begin_at: Timestamp;
  end_at: Timestamp;
  policy: string;
  messages: number;
  dmarc_pass: number;
  dkim_pass: number;
  dkim_aligned: number;
  spf_pass: number;
  spf_aligned: number;
  received_at: Timestamp;
}

export const dmarcReportsMigrations: Migration[] = [
  {
    id: 'dmarc-reports-001',
    sql: `
CREATE TABLE IF NOT EXISTS dmarc_reports (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  domain_id text NOT NULL,
  reporter text NOT NULL,
  reporter_email text NOT NULL,
  report_id text NOT NULL,
  day text NOT NULL,
  begin_at timestamptz NOT NULL,
  end_at timestamptz NOT NULL,
  policy text NOT NULL,
  messages bigint NOT NULL,
  dmarc_pass bigint NOT NULL,
  dkim_pass bigint NOT NULL,
  dkim_aligned bigint NOT NULL,
  spf_pass bigint NOT NULL,
  spf_aligned bigint NOT NULL,
  received_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS dmarc_reports_domain ON dmarc_reports (domain_id, day);
CREATE TABLE IF NOT EXISTS dmarc_report_sources (
  id text PRIMARY KEY,
  report_row_id text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  domain_id text NOT NULL,
  day text NOT NULL,
  ip text NOT NULL,
  messages bigint NOT NULL,
  dmarc_pass bigint NOT NULL,
  dkim_aligned bigint NOT NULL,
  spf_aligned bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS dmarc_report_sources_domain ON dmarc_report_sources (domain_id, day)
`,
  },
];
