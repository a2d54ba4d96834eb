import { parseMime } from './mime.ts';
import type { ApiClient, ApiResponse } from './service.ts';
import type { ReceivedMessage, SmtpSink } from './smtp-sink.ts';

/**
 * A live send load for reliability tests: `count` emails sent `concurrency` at a time through the API, each to
 * its own recipient at rcpt.test and marked with the header `X-Test-Seq: <prefix>-<n>`, so that what the
 * receiving server got can be counted per email.
 */
export interface SendLoad {
  /** Emails acknowledged (200, or 503 `projection_timeout`, which carries the id): seq → email id. */
  acknowledged: Map<string, string>;
  /** Answers that acknowledged nothing, by status and code (`no answer` when the connection failed). */
  refused: Map<string, number>;
  /** Answers received so far. */
  answered: number;
}

export function sendLoad(
  api: ApiClient,
  o: { from: string; prefix: string; count: number; concurrency: number; stop?: () => boolean },
): { load: SendLoad; done: Promise<void> } {
  const load: SendLoad = { acknowledged: new Map(), refused: new Map(), answered: 0 };
  let next = 0;
  const refuse = (why: string) => load.refused.set(why, (load.refused.get(why) ?? 0) + 1);
  const worker = async () => {
    while (next < o.count && !o.stop?.()) {
      const seq = `${o.prefix}-${next++}`;
      let res: ApiResponse | undefined;
      try {
        res = await api.post('/v1/emails', {
          from: o.from,
          to: [`${seq}@rcpt.test`],
          subject: `load ${seq}`,
          text: 'Hi',
          headers: { 'X-Test-Seq': seq },
        });
      } catch {
        refuse('no answer');
      }
      load.answered++;
      const id = res && (res.status === 200 ? res.body.id : res.body?.id);
      if (id) load.acknowledged.set(seq, id);
      else {
        if (res) refuse(`${res.status} ${res.body?.error?.code}`);
        // As a client does: the next request after the time Retry-After says (1 s) or, without an answer, a second.
        await new Promise((r) => setTimeout(r, 1000 * Number(res?.headers['retry-after'] ?? 1)));
      }
    }
  };
  return { load, done: Promise.all(Array.from({ length: o.concurrency }, worker)).then(() => {}) };
}

/** A message the sink received, with the two headers that name its email. */
export interface Delivery {
  seq: string;
  messageId: string;
  /** The email id inside Postline's Message-ID `<em_…@domain>`. */
  emailId?: string;
  receivedAt: Date;
}

export function deliveries(sink: SmtpSink, prefix: string): Delivery[] {
  return sink.messages.flatMap((m: ReceivedMessage) => {
    const { headers } = parseMime(m.raw);
    const seq = headers.get('x-test-seq') ?? '';
    if (!seq.startsWith(`${prefix}-`)) return [];
    const messageId = headers.get('message-id') ?? '';
    return [{ seq, messageId, emailId: /^<(em_[0-9a-z]+)@/.exec(messageId)?.[1], receivedAt: m.receivedAt }];
  });
}

/** The values of `keys` seen more than once, with how often. */
export function repeated(keys: string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return Object.fromEntries([...counts].filter(([, n]) => n > 1));
}

/** Resolves once `check` gives something, trying every `everyMs`; fails past `ms` saying what it waited for. */
export async function eventually<T>(
  what: () => string,
  ms: number,
  check: () => Promise<T | undefined>,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
