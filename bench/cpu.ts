/**
 * CPU time spent by this process and by the PostgreSQL backends serving one database, for "CPU per email"
 * figures: unlike requests per second, they hardly move with what else the machine is doing. PostgreSQL's
 * share is read from /proc, so only for a server on this machine (else `pg` is null).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export interface CpuSample {
  node: number;
  pg: number | null;
}

export async function cpuMeter(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const database = new URL(url).pathname.slice(1);
  const pgSeconds = async (): Promise<number | null> => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    );
    let total = 0;
    for (const { pid } of rows) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        total += (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime
      } catch {
        return null; // not on this machine
      }
    }
    return total;
  };
  return {
    async sample(): Promise<CpuSample> {
      const { user, system } = process.cpuUsage();
      return { node: (user + system) / 1e6, pg: await pgSeconds() };
    },
    /** Microseconds of CPU per unit of work between two samples. */
    per(before: CpuSample, after: CpuSample, units: number) {
      const node = ((after.node - before.node) * 1e6) / units;
      const db = before.pg === null || after.pg === null ? null : ((after.pg - before.pg) * 1e6) / units;
      return { node, pg: db, total: node + (db ?? 0) };
    },
    close: () => client.end(),
  };
}
