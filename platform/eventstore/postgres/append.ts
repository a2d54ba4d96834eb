import { blobRowParams, blobRowsWritten } from '../../blob-rows.ts';
import { type Database, prepared } from '../../db/database.ts';
import { joinJsonTexts, jsonTextsSql } from '../../db/json-texts.ts';
import { mapLimited } from '../../map-limited.ts';
import {
  type AppendResult,
  type BlobRow,
  type ExpectedRevision,
  type NewEvent,
  WrongExpectedRevisionError,
} from '../types.ts';
import { toPosition } from './schema.ts';

const UNIQUE_VIOLATION = '23505';
/** How many appends of a batch that failed together are tried again at once, each on its own. */
const FALLBACK_AT_ONCE = 8;

const APPEND_SQL = prepared(`
WITH cur AS (
  SELECT coalesce(max(stream_revision), -1) AS rev FROM events WHERE stream_id = $1
), ok AS (
  SELECT rev FROM cur WHERE CASE $2::text
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN rev = -1
    WHEN 'stream_exists' THEN rev >= 0
    ELSE rev = $3::bigint END
)
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, ok.rev + x.ord, x.e->>'type', x.e->'data', x.e->'metadata'
FROM ok, json_array_elements($4::json) WITH ORDINALITY AS x(e, ord)
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`);

// `no_stream` and an exact revision (what commands use) need no look-up of the stream's last revision first:
// insert right after the expected one (-1 for no stream). The unique (stream, revision) key turns a writer that
// came first into a unique violation, and the EXISTS guard refuses an expected revision the stream has not
// reached. Revisions have no gaps, so together they mean "the last revision is the expected one". One event (the
// usual case) and many differ only in how the rows are made; both plan far faster than APPEND_SQL.
const APPEND_ONE_AFTER_SQL = prepared(`
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, $2::bigint + 1, $3, $4::json, $5::json
WHERE $2::bigint = -1 OR EXISTS (SELECT 1 FROM events WHERE stream_id = $1 AND stream_revision = $2::bigint)
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`);
const APPEND_MANY_AFTER_SQL = prepared(`
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, $2::bigint + x.ord, x.t, x.d, x.m
FROM unnest($3::text[], $4::json[], $5::json[]) WITH ORDINALITY AS x(t, d, m, ord)
WHERE $2::bigint = -1 OR EXISTS (SELECT 1 FROM events WHERE stream_id = $1 AND stream_revision = $2::bigint)
ORDER BY x.ord
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`);

// Several appends, each after its exact revision, in one statement: the short fields as one JSON parameter
// (cheaper to build and to parse than escaped arrays), in order; the events' data and metadata as JSON texts apart
// (json-texts.ts: read as strings out of the JSON parameter, they cost PostgreSQL twice the time and Node a second
// escaping). Each stream's guard is the one of APPEND_ONE_AFTER_SQL, and its next revision must be free: an append
// whose expectation is stale gets its conflict alone instead of failing everyone's statement with a unique
// violation (an import of addresses that are taken expects a thousand streams not to exist).
const APPEND_BATCH_SQL = prepared(`
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT x.s, x.r, x.t, x.d::json, x.m::json
FROM ROWS FROM (
  json_to_recordset($1::json) AS (o int, s text, a bigint, r bigint, t text),
  ${jsonTextsSql(2)},
  ${jsonTextsSql(3)}
) AS x(o, s, a, r, t, d, m)
LEFT JOIN LATERAL (
  SELECT true AS found FROM events e WHERE x.a >= 0 AND e.stream_id = x.s AND e.stream_revision = x.a LIMIT 1
) previous ON true
LEFT JOIN LATERAL (
  SELECT true AS found FROM events e WHERE e.stream_id = x.s AND e.stream_revision = x.a + 1 LIMIT 1
) later ON true
WHERE (x.a = -1 OR previous.found) AND later.found IS NULL
ORDER BY x.o
RETURNING stream_id, stream_revision, global_position::text AS position, tx_id::text AS tx`);

export interface ExactAppend {
  streamId: string;
  /** The expected revision: -1 for a stream that must not exist yet. */
  after: number;
  events: NewEvent[];
  blobs?: BlobRow[];
}

const withBlobsSql = new Map<string, string>();

/**
 * An append statement (its parameters `params`) that also writes `blobs` (the blob store's rows, blob-rows.ts):
 * they commit with the events that name them, or not at all when the statement fails.
 */
function withBlobs(sql: string, params: unknown[], blobs: BlobRow[] | undefined): [string, unknown[]] {
  if (!blobs?.length) return [sql, params];
  let text = withBlobsSql.get(sql);
  if (!text) {
    const ctes = blobRowsWritten(params.length + 1);
    const own = /^\s*WITH\s/;
    text = prepared(own.test(sql) ? sql.replace(own, () => `WITH ${ctes},\n`) : `WITH ${ctes}\n${sql}`);
    withBlobsSql.set(sql, text);
  }
  return [text, [...params, ...blobRowParams(blobs)]];
}

type InsertedRow = { position: string; stream_revision: number; tx: string };
const resultOf = (rows: InsertedRow[]): AppendResult => {
  const last = rows[rows.length - 1];
  return { nextRevision: Number(last.stream_revision), position: toPosition(last.tx, last.position) };
};

export async function appendBatch(db: Database, batch: ExactAppend[]): Promise<(AppendResult | Error)[]> {
  let o = 0;
  const rows: { o: number; s: string; a: number; r: number; t: string }[] = [];
  const data: string[] = [];
  const metadata: string[] = [];
  for (const a of batch)
    a.events.forEach((e, i) => {
      rows.push({ o: o++, s: a.streamId, a: a.after, r: a.after + i + 1, t: e.type });
      data.push(JSON.stringify(e.data ?? {}));
      metadata.push(JSON.stringify(e.metadata));
    });
  const [sql, params] = withBlobs(
    APPEND_BATCH_SQL,
    [JSON.stringify(rows), joinJsonTexts(data), joinJsonTexts(metadata)],
    batch.flatMap((a) => a.blobs ?? []),
  );
  let inserted: (InsertedRow & { stream_id: string })[];
  try {
    ({ rows: inserted } = await db.query(sql, params));
  } catch (error: any) {
    if (error?.code !== UNIQUE_VIOLATION) throw error;
    // A writer committed a revision after the statement's snapshot: each append on its own, a few at a time, so
    // that a large batch does not queue two statements an append ahead of everyone else's.
    return mapLimited(batch, FALLBACK_AT_ONCE, (a) => appendAfter(db, a).catch((e) => e));
  }
  // Each stream's result is its highest revision, whatever order RETURNING gives the rows in.
  const last = new Map<string, AppendResult>();
  for (const row of inserted) {
    const known = last.get(row.stream_id);
    if (!known || Number(row.stream_revision) > known.nextRevision) last.set(row.stream_id, resultOf([row]));
  }
  const refused = batch.filter((a) => !last.has(a.streamId));
  const revisions = await lastRevisions(
    db,
    refused.map((a) => a.streamId),
  );
  return batch.map(
    (a) =>
      last.get(a.streamId) ??
      conflictOf(a.streamId, a.after < 0 ? 'no_stream' : a.after, revisions.get(a.streamId)),
  );
}

/** The last revision of each stream that has one. */
async function lastRevisions(db: Database, streamIds: string[]): Promise<Map<string, number>> {
  if (streamIds.length === 0) return new Map();
  const { rows } = await db.query<{ stream_id: string; rev: string }>(
    `SELECT stream_id, max(stream_revision)::text AS rev FROM events WHERE stream_id = ANY($1::text[])
     GROUP BY stream_id`,
    [streamIds],
  );
  return new Map(rows.map((r) => [r.stream_id, Number(r.rev)]));
}

const conflictOf = (streamId: string, expected: ExpectedRevision, revision: number | undefined) =>
  new WrongExpectedRevisionError(streamId, expected, revision ?? 'no_stream');

/** One append after an exact revision (-1: a new stream). */
export async function appendAfter(
  db: Database,
  { streamId, after, events, blobs }: ExactAppend,
): Promise<AppendResult> {
  let sql: string;
  let params: unknown[];
  if (events.length === 1) {
    sql = APPEND_ONE_AFTER_SQL;
    const [e] = events;
    params = [streamId, after, e.type, JSON.stringify(e.data ?? {}), JSON.stringify(e.metadata)];
  } else {
    sql = APPEND_MANY_AFTER_SQL;
    params = [
      streamId,
      after,
      events.map((e) => e.type),
      events.map((e) => JSON.stringify(e.data ?? {})),
      events.map((e) => JSON.stringify(e.metadata)),
    ];
  }
  const expected = after < 0 ? 'no_stream' : after;
  const result = await tryAppend(db, ...withBlobs(sql, params, blobs), streamId, expected);
  if (result) return result;
  throw await conflict(db, streamId, expected);
}

/** `any` and `stream_exists` depend on the stream's last revision: looked up in the same statement. */
export async function appendLookingUp(
  db: Database,
  streamId: string,
  events: NewEvent[],
  expected: 'any' | 'stream_exists',
  blobs?: BlobRow[],
) {
  const [sql, params] = withBlobs(
    APPEND_SQL,
    [
      streamId,
      expected,
      null,
      JSON.stringify(events.map((e) => ({ type: e.type, data: e.data ?? {}, metadata: e.metadata }))),
    ],
    blobs,
  );
  for (let attempt = 0; ; attempt++) {
    const result = await tryAppend(db, sql, params, streamId, expected);
    if (result) return result;
    // A concurrent writer took the revision. With `any` that is no conflict: try again.
    if (expected !== 'any' || attempt > 20) throw await conflict(db, streamId, expected);
  }
}

/**
 * Runs one append statement: its result, the conflict when its guard let nothing in, or undefined when a
 * concurrent writer took a revision first (the unique key on (stream, revision)).
 */
async function tryAppend(
  db: Database,
  sql: string,
  params: unknown[],
  streamId: string,
  expected: ExpectedRevision,
): Promise<AppendResult | undefined> {
  try {
    const { rows } = await db.query<InsertedRow>(sql, params);
    if (rows.length === 0) throw await conflict(db, streamId, expected);
    return resultOf(rows);
  } catch (error: any) {
    if (error?.code !== UNIQUE_VIOLATION) throw error;
    return undefined;
  }
}

async function conflict(db: Database, streamId: string, expected: ExpectedRevision) {
  return conflictOf(streamId, expected, (await lastRevisions(db, [streamId])).get(streamId));
}
