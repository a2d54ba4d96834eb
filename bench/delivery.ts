/**
 * The delivery part of `npm run bench:send`: live emails accepted through the API, then delivered by the delivery
 * process manager through the outbound MTA, beside nodemailer sending the same DKIM-signed messages to the same
 * sink over the same number of connections (the raw ceiling). See bench/README.md.
 */
import { performance } from 'node:perf_hooks';
import nodemailer from 'nodemailer';
import type { startPostline } from '../bin/service.ts';
import { DeliveryProcess } from '../processes/delivery/delivery.process.ts';
import { OutboundMta } from '../processes/delivery/mta/outbound.ts';
import type { startSmtpSink } from '../test/support/smtp-sink.ts';
import { type cpuMeter, cpuText } from './cpu.ts';

const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;

type Postline = Awaited<ReturnType<typeof startPostline>>;
type Post = (path: string, key: string, body: unknown) => Promise<{ status: number; body: any }>;

export interface DeliveryBenchOptions {
  postline: Postline;
  sink: Awaited<ReturnType<typeof startSmtpSink>>;
  post: Post;
  liveKey: string;
  domainId: string;
  /** Emails to deliver. */
  count: number;
  /** SMTP connections to the sink: the MTA's per-destination limit, and the ceiling's pool. */
  connections: number;
  email: (to: string) => Record<string, unknown> & { to: string[] };
  meter: ReturnType<typeof cpuMeter>;
}

/** Returns the line for the report. */
export async function measureDelivery(o: DeliveryBenchOptions): Promise<string> {
  const { postline, sink, post } = o;
  const DELIVERY = o.count;
  const MTA_CONNECTIONS = o.connections;
  const email = o.email;
  const org = { liveKey: o.liveKey };
  const domain = { id: o.domainId };
  const config = postline.services.config;
  const delivery = new DeliveryProcess(postline.services, {
    concurrency: 50,
    mta: new OutboundMta({
      dnsServers: config.DNS_SERVERS,
      port: config.OUTBOUND_SMTP_PORT,
      maxConnectionsPerDestination: MTA_CONNECTIONS,
      log: postline.services.log,
    }),
  });
  // A running service follows the log as it grows: the earlier parts' (test-mode) emails are behind it already.
  await delivery.runOnce();
  for (let i = 0; i < DELIVERY; i += 100) {
    const r = await post(
      '/emails/batch',
      org.liveKey,
      Array.from({ length: Math.min(100, DELIVERY - i) }, (_, j) => email(`d${i + j}@rcpt.test`)),
    );
    if (r.status !== 200) throw new Error(`live batch failed: ${JSON.stringify(r.body)}`);
  }
  sink.reset();
  let t0 = performance.now();
  let before = o.meter.sample();
  await delivery.runOnce();
  const deliveryMs = performance.now() - t0;
  const deliveryCpu = o.meter.per(before, o.meter.sample(), DELIVERY);
  await delivery.stop();
  const { rows } = await postline.services.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE type = 'EmailDelivered'`,
  );
  const pipeline = rows[0].n / (deliveryMs / 1000);
  // The projections catch up with the delivery's events first, so the ceiling does not share the CPU with them.
  const head = await postline.services.store.headPosition({ committed: true });
  for (;;) {
    try {
      await postline.services.readYourWrites.waitFor(['emails'], head);
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== 'projection_timeout') throw err;
    }
  }

  // The ceiling: nodemailer, same sink, same connections, same (DKIM-signed) messages.
  sink.reset();
  const key = postline.services.secrets.open(
    (
      await postline.services.db.query(
        'SELECT sealed_dkim_private_key, dkim_selector FROM domains WHERE id = $1',
        [domain.id],
      )
    ).rows[0].sealed_dkim_private_key,
  );
  const selector = (
    await postline.services.db.query('SELECT dkim_selector FROM domains WHERE id = $1', [domain.id])
  ).rows[0].dkim_selector;
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: sink.port,
    pool: true,
    maxConnections: MTA_CONNECTIONS,
    maxMessages: Number.POSITIVE_INFINITY,
    ignoreTLS: true,
    dkim: { domainName: 'acme-bench.test', keySelector: selector, privateKey: key },
  } as any);
  t0 = performance.now();
  before = o.meter.sample();
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < DELIVERY) {
        const i = next++;
        const m = email(`d${i}@rcpt.test`);
        await transport.sendMail({
          ...m,
          envelope: { from: `b+em_${i}@bounces.acme-bench.test`, to: m.to },
        });
      }
    }),
  );
  const rawMs = performance.now() - t0;
  const rawCpu = o.meter.per(before, o.meter.sample(), DELIVERY);
  transport.close();
  const raw = DELIVERY / (rawMs / 1000);
  return (
    `Delivery, ${DELIVERY} live emails accepted -> EmailDelivered: ${pipeline.toFixed(0)} messages/s (${rows[0].n} delivered)` +
    `; raw nodemailer ceiling ${raw.toFixed(0)} messages/s -> ${pct(pipeline, raw)} of the ceiling` +
    `; CPU per message ${cpuText(deliveryCpu)}, ceiling ${cpuText(rawCpu)}`
  );
}
