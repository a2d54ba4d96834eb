import type { Migration } from '../../db/migrations.ts';
import { type Position, START } from '../types.ts';

/** The channel appends are announced on (NOTIFY payload: the sending store's id and the position). */
export const CHANNEL = 'postline_events';

/**
 * The log's table. Positions are (writing transaction id, global position): see `toPosition`. No trigger may
 * NOTIFY: PostgreSQL serialises the commits of all transactions that NOTIFY, so the store notifies after commit.
 * Data and metadata are json, not jsonb: read back whole and never queried inside, the text stays as written
 * (what an auditor replays) and an append costs a third less.
 */
export const eventStoreMigrations: Migration[] = [
  {
    id: 'events-001',
    sql: `
CREATE TABLE events (
  global_position bigserial NOT NULL,
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id text NOT NULL,
  stream_revision bigint NOT NULL,
  type text NOT NULL,
  data json NOT NULL,
  metadata json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tx_id, global_position),
  UNIQUE (stream_id, stream_revision)
)`,
  },
];

// A position is (writing transaction id, global position), zero-padded so string order is log order.
const pad = (n: string | number) => String(n).padStart(20, '0');
export const toPosition = (txId: string | number, globalPosition: string | number): Position =>
  `${pad(txId)}.${pad(globalPosition)}`;
export const fromPosition = (p: Position): [string, string] => {
  if (p === START) return ['0', '0'];
  const [tx, pos] = p.split('.');
  return [String(BigInt(tx)), String(BigInt(pos))];
};
