/**
 * CPU time spent by the PostgreSQL backends serving one database, read from Linux's /proc, so only for a server
 * on this machine. With the Node process's own, it gives "CPU per email" figures: unlike requests per second,
 * they hardly move with what else the machine is doing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { processFamily } from './peers/processes.ts';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds used so far by each backend (by pid) serving `database`; empty when none is found here. */
export function postgresCpu(database: string): Map<string, number> {
  const out = new Map<string, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(` ${database} `)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND); // utime + stime
    } catch {}
  }
  return out;
}

/** Seconds the backends used between two readings; a backend that started meanwhile counts from zero. */
export function postgresCpuSince(before: Map<string, number>, after: Map<string, number>): number {
  let seconds = 0;
  for (const [pid, s] of after) seconds += s - (before.get(pid) ?? 0);
  return seconds;
}

export interface CpuSample {
  node: number;
  pg: Map<string, number>;
}

/** This process and the database's backends, for CPU per unit of work between two samples. */
export function cpuMeter(url: string) {
  const database = new URL(url).pathname.slice(1);
  return {
    sample(): CpuSample {
      const { user, system } = process.cpuUsage();
      return { node: (user + system) / 1e6, pg: postgresCpu(database) };
    },
    /** Microseconds of CPU per unit; `pg` is null when no backend was found on this machine. */
    per(before: CpuSample, after: CpuSample, units: number) {
      const node = ((after.node - before.node) * 1e6) / units;
      const db = after.pg.size === 0 ? null : (postgresCpuSince(before.pg, after.pg) * 1e6) / units;
      return { node, pg: db, total: node + (db ?? 0) };
    },
  };
}

/** CPU per unit of work: this process (server, load generator and sink alike) and the database's backends. */
export const cpuText = (c: { node: number; pg: number | null; total: number }) =>
  `${c.total.toFixed(0)} µs (Node ${c.node.toFixed(0)}${c.pg === null ? '' : ` + PostgreSQL ${c.pg.toFixed(0)}`})`;

/** CPU seconds a process of this machine has used so far (utime + stime), from /proc. */
export function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * CPU seconds since the call of a process and its children (every thread: `processFamily`), and of the backends
 * serving `database` when one is named (0 otherwise): Postline's own, or a peer's.
 */
export function familyCpuMeter(pid: number, database?: string) {
  const family = () => processFamily(pid).reduce((sum, p) => sum + processCpu(p), 0);
  const [node, pg] = [family(), database ? postgresCpu(database) : new Map<string, number>()];
  return () => ({
    node: family() - node,
    pg: database ? postgresCpuSince(pg, postgresCpu(database)) : 0,
  });
}
