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
