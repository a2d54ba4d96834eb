import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { suppressionStream } from '../../domain/suppressions/suppression.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { SuppressionPolicyProcess } from '../../processes/suppression-policy/suppression-policy.process.ts';
import { recordOutcomes, startSending, systemMeta } from '../../write-side/emails/email.commands.ts';
import { emailEventTypes, emailHistory, expectDeliveredAfterOneDelay, readEmail } from '../support/emails.ts';
import { PATIENCE } from '../support/patience.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

let acme: TestOrg;
let simulator: SimulatorProcess;
/** Suppressions follow bounces and complaints in their own process manager: driven before they are looked for. */
let policy: SuppressionPolicyProcess;
const clock = new ManualClock('2026-06-01T10:00:00Z');
const SIM = 'simulator.postline.dev';

const svc = useTestService(() => ({ clock }));
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  simulator = new SimulatorProcess(svc.postline.services);
  policy = new SuppressionPolicyProcess(svc.postline.services);
});
afterAll(() => policy?.stop());

const send = async (to: string[], client = acme.test) => {
  const r = await client.post('/v1/emails', {
    from: 'Acme <hi@acme.test>',
    to,
    subject: 'Sim',
    html: '<p>x</p>',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
const email = (id: string) => readEmail(svc, acme.test, id);
const types = (id: string) => emailEventTypes(svc, id);
/** Has the suppression policy act on what was recorded, then waits for the read model to reach the address's last event. */
const suppressionSeen = async (address: string) => {
  await policy.runOnce();
  const last = (
    await svc.postline.services.store.readStream(suppressionStream(acme.orgId, 'test', address))
  ).at(-1);
  expect(last, `no suppression event for ${address}`).toBeDefined();
  await svc.postline.services.readYourWrites.waitFor(['suppressions'], last!.position);
};
const tick = async (ms: number) => {
  clock.advance(ms);
  await simulator.runOnce();
};

describe('test-mode simulator', () => {
  it('sends at once and delivers a second later', async () => {
    const id = await send([`delivered@${SIM}`, 'anyone@example.org']);
    await simulator.runOnce();
    expect(await types(id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailSent']);
    expect((await email(id)).status).toBe('sent');
    await tick(1000);
    const e = await email(id);
    expect(e.status).toBe('delivered');
    expect(e.recipients.map((r: any) => r.status)).toEqual(['delivered', 'delivered']);
    expect(e.message_id).toBe(`<${id}@acme.test>`);
  });

  it('bounces bounced@ (with +label) hard and suppresses the address in test mode only', async () => {
    const address = `bounced+t1@${SIM}`;
    const id = await send([address]);
    await simulator.runOnce();
    await tick(1000);
    const e = await email(id);
    expect(e.status).toBe('bounced');
    expect(e.recipients[0]).toMatchObject({
      email: address,
      status: 'bounced',
      bounce_type: 'hard',
      smtp_code: 550,
    });
    await suppressionSeen(address);
    const sup = await acme.test.get('/v1/suppressions');
    expect(sup.body.data).toContainEqual(
      expect.objectContaining({ email: address, reason: 'hard_bounce', source_email_id: id }),
    );
    const again = await acme.test.post('/v1/emails', {
      from: 'hi@acme.test',
      to: [address],
      subject: 's',
      text: 't',
    });
    expect(again.body.error.code).toBe('all_recipients_suppressed');
    expect((await acme.live.get('/v1/suppressions')).body.data).toEqual([]);
  });

  it('delays delayed@, then delivers it after the retry', async () => {
    const id = await send([`delayed@${SIM}`]);
    await simulator.runOnce();
    await tick(1000);
    const e = await email(id);
    expect(e.status).toBe('sent');
    expect(e.recipients[0]).toMatchObject({ status: 'delayed', attempts: 1, smtp_code: 451 });
    expect(e.recipients[0].next_attempt_at).toBe(new Date(clock.now().getTime() + 5 * 60_000).toISOString());
    await tick(5 * 60_000);
    await expectDeliveredAfterOneDelay(svc, await email(id));
  });

  it('delivers complained@, then records the complaint and suppresses the address', async () => {
    const id = await send([`complained@${SIM}`, `delivered@${SIM}`]);
    await simulator.runOnce();
    await tick(1000);
    expect((await email(id)).status).toBe('delivered');
    await tick(60_000);
    const e = await email(id);
    expect(e.status).toBe('complained');
    expect(e.recipients.map((r: any) => [r.email, r.status])).toEqual([
      [`complained@${SIM}`, 'complained'],
      [`delivered@${SIM}`, 'delivered'],
    ]);
    await suppressionSeen(`complained@${SIM}`);
    const sup = await acme.test.get('/v1/suppressions?reason=complaint');
    expect(sup.body.data.map((s: any) => s.email)).toContain(`complained@${SIM}`);
  });

  it('opens opened@ and clicks the first link for clicked@, five seconds after delivery', async () => {
    const r = await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`opened@${SIM}`, `clicked@${SIM}`],
      subject: 'Sim',
      html: '<p><a href="https://acme.test/welcome?a=1">welcome</a></p>',
    });
    const id = r.body.id as string;
    await simulator.runOnce();
    await tick(1000);
    expect(await types(id)).not.toContain('EmailOpened');
    await tick(5000);
    const events = (await emailHistory(svc, id)).slice(-3);
    // The two recipients' steps play side by side, so only clicked@'s own order is fixed: its open before its
    // click, which makes the first of the three an open either way.
    expect(events[0].type).toBe('EmailOpened');
    const byType = [...events].sort((a, b) => a.type.localeCompare(b.type));
    // The simulated reader's client details are recorded only for an organization that asks for them.
    expect(byType.map((e) => [e.type, e.data])).toEqual([
      ['EmailClicked', { emailId: id, link: 'https://acme.test/welcome?a=1', clickedAt: expect.any(String) }],
      ['EmailOpened', { emailId: id, openedAt: expect.any(String) }],
      ['EmailOpened', { emailId: id, openedAt: expect.any(String) }],
    ]);
    const e = await email(id);
    expect([e.opens, e.clicks]).toEqual([2, 1]);
  });

  it('records each open and click once when a crash makes their steps play again', async () => {
    const r = await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`opened@${SIM}`, `opened+2@${SIM}`, `clicked@${SIM}`],
      subject: 'Sim',
      html: '<p><a href="https://acme.test/again">again</a></p>',
    });
    const id = r.body.id as string;
    await simulator.runOnce();
    await tick(1000);
    const { db } = svc.postline.services;
    // The steps still to play: an open for each of the three, and clicked@'s click.
    const { rows: steps } = await db.query(
      'SELECT email_id, recipient, seq, org_id, mode, due_at, step FROM simulator_steps WHERE email_id = $1',
      [id],
    );
    expect(steps.map((s) => s.step.kind).sort()).toEqual(['clicked', 'opened', 'opened', 'opened']);
    await tick(5000);
    const engagements = async () =>
      (await types(id)).filter((t) => t === 'EmailOpened' || t === 'EmailClicked').sort();
    expect(await engagements()).toEqual(['EmailClicked', 'EmailOpened', 'EmailOpened', 'EmailOpened']);
    // The crash: each step appended its event, then its process died before the step's finish was written. The
    // rows stay, claimed by the dead process until their lease runs out; then a simulator started afresh (nothing
    // in memory) claims them and plays them again.
    for (const s of steps)
      await db.query(
        `INSERT INTO simulator_steps (email_id, recipient, seq, org_id, mode, due_at, step, claimed_until)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [s.email_id, s.recipient, s.seq, s.org_id, s.mode, s.due_at, s.step, clock.now()],
      );
    clock.advance(10_000);
    const restarted = new SimulatorProcess(svc.postline.services);
    expect(await restarted.runOnce()).toBe(4);
    expect((await db.query('SELECT 1 FROM simulator_steps WHERE email_id = $1', [id])).rows).toEqual([]);
    expect(await engagements()).toEqual(['EmailClicked', 'EmailOpened', 'EmailOpened', 'EmailOpened']);
    const e = await email(id);
    expect([e.opens, e.clicks]).toEqual([3, 1]);
  });

  it('plays each step once with several simulators and a replay of the log', async () => {
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push(await send([`delivered+${i}@${SIM}`, `bounced+${i}@${SIM}`]));
    const others = [1, 2].map(() => new SimulatorProcess(svc.postline.services));
    await Promise.all([simulator, ...others].map((s) => s.runOnce()));
    clock.advance(1000);
    await Promise.all([simulator, ...others].map((s) => s.runOnce()));
    for (const id of ids) {
      const t = await types(id);
      expect(t.slice(0, 3)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailSent']);
      expect(t.slice(3).sort()).toEqual(['EmailBounced', 'EmailDelivered']);
    }
  });

  it('gives the Message-ID a live email gets even when a step is played before the send is recorded', async () => {
    const id = await send([`delivered@${SIM}`]);
    const db = svc.postline.services.db;
    const step = (recipient: string, seq: number, step: object, claimedUntil: Date | null) =>
      db.query(
        `INSERT INTO simulator_steps (email_id, recipient, seq, org_id, mode, due_at, step, claimed_until)
         VALUES ($1, $2, $3, $4, 'test', $5, $6, $7)`,
        [id, recipient, seq, acme.orgId, clock.now(), JSON.stringify(step), claimedUntil],
      );
    // Another simulator holds the send step and has recorded only that sending started (EmailSent is still to
    // come) when a recipient's step plays here: that step's outcome records EmailSent, with its Message-ID.
    await step('', 0, {}, new Date(clock.now().getTime() + 60_000));
    await startSending(svc.postline.services, systemMeta({ orgId: acme.orgId, mode: 'test' }), id);
    await step(`delivered@${SIM}`, 1, { afterMs: 0, kind: 'delivered' }, null);
    await simulator.runOnce();
    expect(await types(id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailSent', 'EmailDelivered']);
    expect((await email(id)).message_id).toBe(`<${id}@acme.test>`);
    await db.query('DELETE FROM simulator_steps WHERE email_id = $1', [id]);
  });

  it('never touches live emails', async () => {
    const emailId = 'em_01livelivelivelivelivelive';
    const content = {
      emailId,
      orgId: acme.orgId,
      mode: 'live',
      from: 'hi@acme.test',
      to: [`delivered@${SIM}`],
      cc: [],
      bcc: [],
      replyTo: [],
      subject: 's',
      html: null,
      text: 't',
      headers: {},
      tags: [],
      attachments: [],
      domainId: 'dom_x',
      domainName: 'acme.test',
      suppressedRecipients: [],
      createdAt: clock.now().toISOString(),
    };
    await svc.postline.services.store.append(
      `email-${emailId}`,
      [{ type: 'EmailQueued', data: content, metadata: { orgId: acme.orgId, mode: 'live', actor: 'test' } }],
      { expectedRevision: 'no_stream' },
    );
    await tick(10_000);
    expect(await types(emailId)).toEqual(['EmailQueued']);
    const { rows } = await svc.postline.services.db.query(
      'SELECT * FROM simulator_steps WHERE email_id = $1',
      [emailId],
    );
    expect(rows).toEqual([]);
  });

  it('adds the suppression of a bounce recorded just before a crash, when the step runs again', async () => {
    const address = `bounced+crash@${SIM}`;
    const id = await send([address]);
    await simulator.runOnce();
    // The crash: the bounce reached the email's stream, the suppression did not, the step is still due.
    await recordOutcomes(
      svc.postline.services,
      systemMeta({ orgId: acme.orgId, mode: 'test' }),
      id,
      `<${id}@acme.test>`,
      [
        {
          recipient: address,
          result: 'bounced',
          bounceType: 'hard',
          attempt: 1,
          smtpCode: 550,
          smtpResponse: '550 5.1.1 gone',
        },
      ],
    );
    expect(
      await svc.postline.services.store.readStream(suppressionStream(acme.orgId, 'test', address)),
    ).toEqual([]);
    await tick(5_000);
    await suppressionSeen(address);
    const list = await acme.test.get('/v1/suppressions?reason=hard_bounce&limit=100');
    expect(list.body.data.map((x: any) => x.email)).toContain(address);
  });

  it('started, follows the log by itself: sends a new email at once and delivers it when its time comes', async () => {
    const running = new SimulatorProcess(svc.postline.services);
    running.start();
    try {
      const id = await send([`delivered+live@${SIM}`]);
      await vi.waitFor(async () => expect(await types(id)).toContain('EmailSent'), PATIENCE);
      clock.advance(1000);
      await vi.waitFor(async () => expect(await types(id)).toContain('EmailDelivered'), PATIENCE);
      expect(await types(id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailSent', 'EmailDelivered']);
    } finally {
      await running.stop();
    }
  });
});
