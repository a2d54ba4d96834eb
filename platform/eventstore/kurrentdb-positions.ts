import {
  ANY,
  type AppendStreamState,
  type Position as KurrentPosition,
  NO_STREAM,
  STREAM_EXISTS,
} from '@kurrent/kurrentdb-client';
import type { ExpectedRevision, Position } from './types.ts';

// A position is KurrentDB's (commit, prepare) pair, zero-padded to the width of an unsigned 64-bit number,
// so that comparing two positions as strings is comparing them in log order (as with the PostgreSQL adapter).
const pad = (n: bigint) => n.toString(10).padStart(20, '0');
export const toPosition = (p: KurrentPosition): Position => `${pad(p.commit)}.${pad(p.prepare)}`;
export const fromPosition = (p: Position): KurrentPosition => {
  const [commit, prepare] = p.split('.');
  if (commit === undefined || prepare === undefined) throw new Error(`not a KurrentDB position: ${p}`);
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
};

export const toStreamState = (expected: ExpectedRevision): AppendStreamState => {
  if (typeof expected === 'number') return BigInt(expected);
  if (expected === 'no_stream') return NO_STREAM;
  if (expected === 'stream_exists') return STREAM_EXISTS;
  return ANY;
};
