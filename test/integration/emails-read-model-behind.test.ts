import { beforeAll, describe, expect, it } from 'vitest';
import { type TestOrg, useTestService, whileProjectionsStopped } from '../support/service.ts';

// The projections stop for a test: a send must not wait for them (write-side/emails/readable-email.ts).
const svc = useTestService();
let org: TestOrg;
beforeAll(async () => {
  org = await svc.createOrg('pro');
});

const email = (subject: string) => ({
  from: 'Acme <hello@acme.test>',
  to: ['delivered@simulator.postline.dev'],
  subject,
  text: 'Hello',
  attachments: [{ filename: 'note.txt', content: Buffer.from('a note').toString('base64') }],
});

/** The service's count of requests that wrote the `emails` read model's rows ahead of it. */
async function writesAhead(): Promise<number> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('postline_read_model_writes_ahead_total{projection="emails"}'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('Sends while the emails read model is behind', () => {
  it('answer with their emails readable, which the read model then counts once', async () => {
    const before = (await org.test.get('/v1/usage')).body.emails;
    const aheadBefore = await writesAhead();
    const { sent, got, attached, listed, usage } = await whileProjectionsStopped(svc, async () => {
      const sent = [
        await org.test.post('/v1/emails', email('first')),
        await org.test.post('/v1/emails', email('second')),
      ];
      const got = await org.test.get(`/v1/emails/${sent[0].body.id}`);
      const attached = await org.test.get(`/v1/emails/${sent[0].body.id}/attachments`);
      const listed = await org.test.get('/v1/emails?limit=10');
      const usage = await org.test.get('/v1/usage');
      return { sent, got, attached, listed, usage };
    });
    for (const r of sent) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const ids = sent.map((r) => r.body.id);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: ids[0], status: 'queued', subject: 'first' });
    expect(attached.body.data.map((a: { filename: string }) => a.filename)).toEqual(['note.txt']);
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining(ids));
    expect(usage.body.emails).toBe(before + 2);
    expect(await writesAhead()).toBe(aheadBefore + 2);

    // The projection reaches those emails, finds them in, and goes on with what happened to them since.
    await svc.postline.runner.caughtUp();
    expect((await org.test.get('/v1/usage')).body.emails).toBe(before + 2);
    const again = await org.test.get(`/v1/emails/${ids[0]}/attachments`);
    expect(again.body.data.map((a: { filename: string }) => a.filename)).toEqual(['note.txt']);
  });
});

describe('A send whose row cannot be written ahead', () => {
  const lagging = useTestService({ env: { PROJECTION_WAIT_MS: '300' } });
  let acme: TestOrg;
  beforeAll(async () => {
    acme = await lagging.createOrg('pro');
  });

  it('waits for the read model, and past its deadline answers 503 projection_timeout carrying its id', async () => {
    const db = lagging.postline.services.db;
    // The write-ahead's row breaks a rule the projection's will not meet: it is dropped before they catch up.
    await db.query(`ALTER TABLE emails ADD CONSTRAINT not_ahead CHECK (subject <> 'refused ahead')`);
    const answer = await whileProjectionsStopped(lagging, async () => {
      const answer = await acme.test.post('/v1/emails', email('refused ahead'));
      await db.query('ALTER TABLE emails DROP CONSTRAINT not_ahead');
      return answer;
    });
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('projection_timeout');
    expect(answer.body.id).toMatch(/^em_/);
    await lagging.postline.runner.caughtUp();
    const got = await acme.test.get(`/v1/emails/${answer.body.id}`);
    expect(got.body).toMatchObject({ id: answer.body.id, subject: 'refused ahead', status: 'queued' });
  });
});
