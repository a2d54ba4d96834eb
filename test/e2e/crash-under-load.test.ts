import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { type ApiClient, apiClient } from '../support/service.ts';

/**
 * The standing reliability test: the service is killed (SIGKILL) in the middle of a send load, some requests
 * with an Idempotency-Key and some without, then started again on the same database. Every request that got no
 * answer, or a server error, is sent again with its key. Then no acknowledged email may be missing from the
 * log, no key may have sent two emails, and every email must reach a final status (the simulator delivers
 * test-mode email). Seeded: RELIABILITY_SEED repeats a run.
 */

const SEED = Number(process.env.RELIABILITY_SEED ?? 13);
const REQUESTS = 120;
const CONCURRENCY = 12;
const LEASE_MS = 1000;
const FINAL = new Set(['delivered', 'bounced', 'complained', 'canceled']);

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface LoadRequest {
  path: '/v1/emails' | '/v1/emails/batch';
  body: unknown;
  subjects: string[];
  key?: string;
  /** The ids of the final answer (200), if it came. */
  ids?: string[];
  /** No answer (the process died) or a server error: to send again, when it has a key. */
  unanswered: boolean;
}

function loadRequests(random: () => number): LoadRequest[] {
  const email = (subject: string) => ({
    from: 'Load <load@load.example>',
    to: [`delivered+${subject}@simulator.postline.dev`],
    subject,
    text: 'Hi',
  });
  return Array.from({ length: REQUESTS }, (_, i) => {
    const keyed = random() < 0.75;
    const batch = random() < 0.25;
    const subjects = batch ? [`r${i}a`, `r${i}b`] : [`r${i}`];
    return {
      path: batch ? '/v1/emails/batch' : '/v1/emails',
      body: batch ? subjects.map(email) : email(subjects[0]),
      subjects,
      ...(keyed && { key: `load-${SEED}-${i}` }),
      unanswered: true,
    };
  });
}

const idsOf = (path: LoadRequest['path'], body: any): string[] =>
  path === '/v1/emails' ? [body.id] : body.data.map((item: { id: string }) => item.id);

async function send(api: ApiClient, r: LoadRequest) {
  const res = await api.post(r.path, r.body, r.key ? { 'idempotency-key': r.key } : {});
  if (res.status === 200) {
    r.ids = idsOf(r.path, res.body);
    r.unanswered = false;
  } else if (res.status < 500 && res.body?.error?.code !== 'idempotency_request_in_flight') {
    throw new Error(`unexpected answer ${res.status}: ${JSON.stringify(res.body)}`);
  }
  return res;
}

const setup = useServiceEnv({
  RATE_LIMIT_RPS: '100000',
  RATE_LIMIT_BATCH_RPS: '100000',
  IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
});

describe('kill -9 under a send load', () => {
  it('loses no acknowledged email, sends none twice for one key, and leaves none unfinished', async () => {
    console.log(`reliability seed ${SEED} (RELIABILITY_SEED repeats it)`);
    const random = mulberry32(SEED);
    const requests = loadRequests(random);
    const killAfter = 20 + Math.floor(random() * 40);

    const port = await freePort();
    const first = await startServer({ ...setup.env, PORT: String(port) });
    const org = await createOrgWithCli(setup.env, 'Load', 'pro');
    const api = apiClient(`http://127.0.0.1:${port}`, org.test_key);

    // The load: CONCURRENCY requests in flight, the process killed once `killAfter` have been answered.
    let next = 0;
    let answered = 0;
    let killed = false;
    const worker = async () => {
      while (!killed && next < requests.length) {
        const r = requests[next++];
        try {
          await send(api, r);
          if (++answered === killAfter) {
            killed = true;
            first.child.kill('SIGKILL');
          }
        } catch (error) {
          if (!killed) throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    // Killed by a signal, a process has no exit code: its signal code says it is gone.
    if (first.child.signalCode === null) await new Promise((r) => first.child.once('exit', r));
    const cutOff = requests.filter((r) => r.unanswered && requests.indexOf(r) < next);
    console.log(`killed after ${answered} answers; ${cutOff.length} requests cut off`);
    expect(cutOff.length).toBeGreaterThan(0);

    // Started again on the same database; every request cut off is sent again with its key, as a client would.
    const second = await startServer({ ...setup.env, PORT: String(port) });
    try {
      for (const r of cutOff.filter((r) => r.key)) {
        for (let attempt = 0; r.unanswered && attempt < 50; attempt++) {
          const res = await send(api, r);
          if (r.unanswered)
            await new Promise((done) => setTimeout(done, res.status === 409 ? LEASE_MS / 4 : 100));
        }
      }
      // The rest of the load, on the new process.
      for (const r of requests.slice(next)) await send(api, r);

      const log = new pg.Client({ connectionString: setup.env.DATABASE_URL });
      await log.connect();
      const queued = (
        await log.query<{ id: string; subject: string }>(
          `SELECT data->>'emailId' AS id, data->>'subject' AS subject FROM events WHERE type = 'EmailQueued'`,
        )
      ).rows;
      await log.end();
      const inLog = new Set(queued.map((q) => q.id));
      const perSubject = new Map<string, number>();
      for (const q of queued) perSubject.set(q.subject, (perSubject.get(q.subject) ?? 0) + 1);

      const acknowledged = requests.flatMap((r) => r.ids ?? []);
      const lost = acknowledged.filter((id) => !inLog.has(id));
      const doubled = requests
        .filter((r) => r.key)
        .flatMap((r) => r.subjects)
        .filter((s) => (perSubject.get(s) ?? 0) > 1);
      const keyedUnanswered = requests.filter((r) => r.key && r.unanswered);

      // Every email in the log reaches a final status: the simulator answers a second after sending.
      let unfinished: string[] = [...inLog];
      for (
        let round = 0, end = Date.now() + PATIENCE_MS;
        unfinished.length > 0 && Date.now() < end;
        round++
      ) {
        if (round > 0) await new Promise((done) => setTimeout(done, 500));
        const statuses = new Map<string, string>();
        let cursor: string | undefined;
        do {
          const page = await api.get(`/v1/emails?limit=100${cursor ? `&starting_after=${cursor}` : ''}`);
          for (const e of page.body.data) statuses.set(e.id, e.status);
          cursor = page.body.has_more ? page.body.data.at(-1).id : undefined;
        } while (cursor);
        unfinished = [...inLog]
          .filter((id) => !FINAL.has(statuses.get(id) ?? 'absent'))
          .map((id) => `${id} ${statuses.get(id) ?? 'absent'}`);
      }

      console.log(
        `${acknowledged.length} acknowledged, ${queued.length} queued: lost ${lost.length}, doubled ` +
          `${doubled.length}, non-terminal ${unfinished.length}`,
      );
      expect({ lost, doubled, keyedUnanswered: keyedUnanswered.length, unfinished }).toEqual({
        lost: [],
        doubled: [],
        keyedUnanswered: 0,
        unfinished: [],
      });
    } finally {
      await second.stop();
    }
  }, 300_000);
});
