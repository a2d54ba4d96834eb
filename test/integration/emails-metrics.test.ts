import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { readEmail } from '../support/emails.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { oneClick, unsubscribeLink } from '../support/unsubscribe-links.ts';

/**
 * `GET /v1/emails/metrics`: a tenant's emails of a range counted by what became of their recipients, on the test
 * mode's simulator and a manual clock (docs/emails.md, "Metrics").
 */
const clock = new ManualClock('2026-06-01T10:00:00Z');
const SIM = 'simulator.postline.dev';
const svc = useTestService(() => ({ clock }));
let acme: TestOrg;
const ids: Record<string, string> = {};

const send = async (name: string, over: Record<string, unknown>) => {
  const r = await acme.test.post('/v1/emails', {
    from: 'Acme <hi@acme.test>',
    subject: 'Figures',
    html: '<p>x</p>',
    ...over,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  ids[name] = r.body.id;
};
const metrics = async (query = '', client = acme.test) => {
  const r = await client.get(`/v1/emails/metrics${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

beforeAll(async () => {
  acme = await svc.createOrg('pro');
  const simulator = new SimulatorProcess(svc.postline.services);
  await acme.test.post('/v1/suppressions', { email: 'gone@example.org' });
  // 1 June: delivered and bounced, with one address suppressed; opened; one scheduled for later.
  await send('mixed', { to: [`delivered@${SIM}`, `bounced@${SIM}`, 'gone@example.org'] });
  await send('opened', { to: [`opened@${SIM}`] });
  await send('later', { to: [`delivered@${SIM}`], send_at: '2026-06-20T10:00:00Z' });
  // 2 June: delayed.
  clock.advance(86_400_000);
  await send('delayed', { to: [`delayed@${SIM}`] });
  await simulator.runOnce();
  for (const ms of [1000, 5000]) {
    clock.advance(ms);
    await simulator.runOnce();
  }
  for (const id of Object.values(ids)) await readEmail(svc, acme.test, id);
});

const ALL_ZERO = {
  received: 0,
  sent: 0,
  delivered: 0,
  delivery_delayed: 0,
  bounced: 0,
  bounced_permanent: 0,
  bounced_transient: 0,
  complained: 0,
  suppressed: 0,
  opened: 0,
  unique_opened: 0,
  clicked: 0,
  unique_clicked: 0,
  unsubscribed: 0,
  delivery_rate: 0,
  bounce_rate: 0,
  complaint_rate: 0,
  open_rate: 0,
  click_rate: 0,
  unsubscribe_rate: 0,
};

describe('GET /v1/emails/metrics', () => {
  it('counts the range’s emails by their recipients, with the rates of what they are a share of', async () => {
    const m = await metrics('?start_date=2026-06-01&end_date=2026-06-02');
    expect(m).toEqual({
      object: 'metrics',
      start_date: '2026-06-01T00:00:00.000Z',
      end_date: '2026-06-03T00:00:00.000Z',
      timezone: 'UTC',
      granularity: 'daily',
      metrics: Object.keys(ALL_ZERO),
      dimensions: [],
      totals: {
        ...ALL_ZERO,
        received: 5,
        sent: 4,
        delivered: 2,
        delivery_delayed: 1,
        bounced: 1,
        bounced_permanent: 1,
        suppressed: 1,
        opened: 1,
        unique_opened: 1,
        delivery_rate: 0.5,
        bounce_rate: 0.25,
        open_rate: 0.5,
      },
    });
  });

  it('breaks the range down by day, in UTC or in a time zone', async () => {
    const utc = await metrics(
      '?start_date=2026-06-01&end_date=2026-06-02&dimensions=period&metrics=received,sent',
    );
    expect(utc.data).toEqual([
      { period: '2026-06-01T00:00:00.000Z', received: 4, sent: 3 },
      { period: '2026-06-02T00:00:00.000Z', received: 1, sent: 1 },
    ]);
    expect(utc.totals).toEqual({ received: 5, sent: 4 });
    // 10:00 UTC is 03:00 in Los Angeles: the same days, which begin at 07:00 UTC there.
    const la = await metrics(
      '?start_date=2026-06-01&end_date=2026-06-01&dimensions=period&metrics=received&timezone=America/Los_Angeles',
    );
    expect([la.start_date, la.end_date]).toEqual(['2026-06-01T07:00:00.000Z', '2026-06-02T07:00:00.000Z']);
    expect(la.data).toEqual([{ period: '2026-06-01T07:00:00.000Z', received: 4 }]);
  });

  it('takes instants, defaults to the week up to now, and filters by email', async () => {
    const instants = await metrics('?start_date=2026-06-02T00:00:00Z&end_date=2026-06-02T12:30:00%2B02:00');
    expect(instants.totals).toMatchObject({ received: 1, delivery_delayed: 1 });
    const week = await metrics('?metrics=received');
    expect(week).toMatchObject({
      start_date: '2026-05-27T00:00:00.000Z',
      end_date: clock.now().toISOString(),
      totals: { received: 5 },
    });
    const one = await metrics(`?email_id=${ids.mixed},${ids.opened}&metrics=received,opened`);
    expect(one.totals).toEqual({ received: 3, opened: 1 });
  });

  it('breaks down by sending domain and broadcast', async () => {
    const m = await metrics('?dimensions=domain,broadcast&metrics=received');
    expect(m.data).toEqual([
      { domain_id: null, domain_name: 'acme.test', broadcast_id: null, broadcast_name: null, received: 5 },
    ]);
    expect((await metrics('?domain_id=dom_nothere&metrics=received')).totals).toEqual({ received: 0 });
  });

  it('counts nothing of another mode or organization', async () => {
    expect((await metrics('', acme.live)).totals).toEqual(ALL_ZERO);
    const other = await svc.createOrg('pro');
    expect((await metrics('', other.test)).totals).toEqual(ALL_ZERO);
    expect((await metrics('?dimensions=period', other.test)).data).toEqual([]);
  });

  it('counts the emails whose unsubscribe link was used, each once, and their share of the recipients delivered', async () => {
    const org = await svc.createOrg('pro');
    const topic = (await org.test.post('/v1/topics', { name: 'Tips', default_subscription: 'opt_in' })).body
      .id;
    const sent: string[] = [];
    for (const to of [`delivered@${SIM}`, `delivered+2@${SIM}`, `delivered+3@${SIM}`]) {
      const r = await org.test.post('/v1/emails', {
        from: 'hi@acme.test',
        to,
        subject: 'Tip',
        text: 'x',
        topic_id: topic,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      sent.push(r.body.id);
    }
    const simulator = new SimulatorProcess(svc.postline.services);
    await simulator.runOnce();
    clock.advance(1000);
    await simulator.runOnce();
    const links = await Promise.all(
      sent.map(async (id) => {
        const { headers } = await readEmail(svc, org.test, id);
        return unsubscribeLink(headers, svc.baseUrl);
      }),
    );
    // The first email's link twice (one unsubscribe), the second's once, the third's never.
    for (const url of [links[0], links[0], links[1]]) expect((await oneClick(url)).status).toBe(200);
    const { store, readYourWrites } = svc.postline.services;
    await readYourWrites.waitFor(['email-unsubscribes'], await store.headPosition({ committed: true }));
    const m = await metrics('?metrics=received,delivered,unsubscribed,unsubscribe_rate', org.test);
    expect(m.totals).toEqual({ received: 3, delivered: 3, unsubscribed: 2, unsubscribe_rate: 0.6667 });
    const one = await metrics(`?email_id=${sent[1]},${sent[2]}&metrics=unsubscribed`, org.test);
    expect(one.totals).toEqual({ unsubscribed: 1 });
  });

  it('refuses a zone JavaScript keeps and the database does not (an old alias), naming timezone', async (ctx) => {
    const zone = 'Canada/East-Saskatchewan';
    const { rows } = await svc.postline.services.db.query('SELECT 1 FROM pg_timezone_names WHERE name = $1', [
      zone,
    ]);
    if (rows.length > 0) {
      console.log(`skipped: this PostgreSQL knows ${zone}, so it is no zone only JavaScript knows here`);
      return ctx.skip();
    }
    const r = await acme.test.get(`/v1/emails/metrics?timezone=${zone}&dimensions=period`);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.message).toBe(
      '`timezone`: is not a time zone the database knows: give its current IANA name',
    );
  });

  it.each([
    ['metrics=opens', 'metrics'],
    ['metrics=sent,sent', 'metrics'],
    ['dimensions=email', 'dimensions'],
    ['timezone=Mars/Olympus', 'timezone'],
    ['timezone=Europe/Berlin%00', 'query.timezone'],
    ['timezone=Europe/Berlin%0D%0AX', 'timezone'],
    // An offset, which PostgreSQL would read the other way round (POSIX).
    ['timezone=%2B01:00', 'timezone'],
    ['start_date=June', 'start_date'],
    ['start_date=0000-01-01', 'start_date'],
    ['start_date=2026-06-01T00:00:00', 'start_date'],
    ['start_date=2026-06-03&end_date=2026-06-01', 'start_date'],
    ['start_date=2025-01-01&end_date=2026-06-01', 'end_date'],
    ['start_date=2026-01-01&end_date=2026-03-01&granularity=hourly', 'granularity'],
    ['granularity=yearly', 'granularity'],
    ['email_id=mixed', 'email_id'],
    ['colour=red', 'colour'],
  ])('refuses %s with 422 naming %s', async (query, field) => {
    const r = await acme.test.get(`/v1/emails/metrics?${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message).toContain(`\`${field}`);
  });
});
