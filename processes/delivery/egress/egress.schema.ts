import type { Migration } from '../../../platform/db/migrations.ts';

/**
 * Warm-up counters, shared by every worker process: the messages each source sent to each destination group on
 * each UTC day, taken one by one below the day's cap in one statement (egress-sources.ts). Rows of past days
 * are pruned; today's are what `postline sources` shows.
 */
export const egressMigrations: Migration[] = [
  {
    id: 'egress-001',
    sql: `CREATE TABLE IF NOT EXISTS egress_warmup (
  day date NOT NULL,
  source text NOT NULL,
  grp text NOT NULL,
  used int NOT NULL,
  PRIMARY KEY (day, source, grp)
)`,
  },
];

export interface EgressWarmupRow {
  day: string;
  source: string;
  grp: string;
  used: number;
}
