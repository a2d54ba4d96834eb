import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { broadcastDecider } from '../../domain/broadcasts/broadcast.decider.ts';
import type { BroadcastContent, BroadcastEvent } from '../../domain/broadcasts/broadcast.events.ts';
import {
  checkBroadcastContent,
  withFooter,
  withPreheader,
} from '../../domain/broadcasts/broadcast-content.ts';
import { UnsubscribeTokens } from '../../domain/broadcasts/unsubscribe-token.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const caller = { broadcastId: 'bc_1', orgId: 'org_1', mode: 'live' as const };
const content: BroadcastContent = {
  name: 'News',
  audienceId: 'aud_1',
  topicId: null,
  from: 'news@acme.test',
  replyTo: [],
  subject: 'Hi {{contact.first_name}}',
  html: '<p>Hi</p>',
  text: null,
  templateId: null,
};
const created: BroadcastEvent = {
  type: 'BroadcastCreated',
  data: { broadcastId: 'bc_1', orgId: 'org_1', mode: 'live', ...content, createdAt: 'T1' },
};
const started: BroadcastEvent = {
  type: 'BroadcastSendingStarted',
  data: { broadcastId: 'bc_1', plan: 'pro', startedAt: 'T2', emailIds: 'contact-ordered' },
};
const scheduled: BroadcastEvent = {
  type: 'BroadcastScheduled',
  data: { broadcastId: 'bc_1', sendAt: '2026-09-02T00:00:00.000Z', plan: 'free', scheduledAt: 'T2' },
};
const none = { unsubscribed: 0, suppressed: 0, notSubscribed: 0, quota: 0, failed: 0 };
const batch = (after: string, cursor: string, queued: number): BroadcastEvent => ({
  type: 'BroadcastBatchExpanded',
  data: { broadcastId: 'bc_1', after, cursor, queued, skipped: none, expandedAt: 'T3' },
});

describe('broadcast decider', () => {
  it('creates a draft, once', () => {
    const create = { ...caller, type: 'CreateBroadcast' as const, content, at: 'T1' };
    spec(broadcastDecider).given([]).when(create).then([created]);
    spec(broadcastDecider).given([created]).when(create).then([]);
  });

  it('changes, deletes and sends only a draft', () => {
    const rename = {
      ...caller,
      type: 'UpdateBroadcast' as const,
      content: { ...content, name: 'Old news' },
      at: 'T2',
    };
    spec(broadcastDecider)
      .given([created])
      .when(rename)
      .then([
        {
          type: 'BroadcastUpdated',
          data: { broadcastId: 'bc_1', ...content, name: 'Old news', updatedAt: 'T2' },
        },
      ]);
    spec(broadcastDecider)
      .given([created])
      .when({ ...rename, content })
      .then([]);
    for (const command of [
      rename,
      { ...caller, type: 'DeleteBroadcast' as const, at: 'T3' },
      { ...caller, type: 'SendBroadcast' as const, plan: 'pro' as const, at: 'T3' },
    ])
      spec(broadcastDecider)
        .given([created, started])
        .when(command)
        .thenFails('broadcast_not_draft', /is sending/);
    spec(broadcastDecider)
      .given([created])
      .when({ ...caller, type: 'DeleteBroadcast', at: 'T3' })
      .then([{ type: 'BroadcastDeleted', data: { broadcastId: 'bc_1', deletedAt: 'T3' } }]);
  });

  it('sends now or schedules; cancels what is scheduled (a draft again) or sending (stopped)', () => {
    const send = { ...caller, type: 'SendBroadcast' as const, plan: 'pro' as const, at: 'T2' };
    spec(broadcastDecider).given([created]).when(send).then([started]);
    spec(broadcastDecider)
      .given([created])
      .when({ ...send, plan: 'free', sendAt: '2026-09-02T00:00:00.000Z' })
      .then([scheduled]);
    const cancel = { ...caller, type: 'CancelBroadcast' as const, at: 'T3' };
    const unscheduled: BroadcastEvent = {
      type: 'BroadcastUnscheduled',
      data: { broadcastId: 'bc_1', unscheduledAt: 'T3' },
    };
    spec(broadcastDecider).given([created, scheduled]).when(cancel).then([unscheduled]);
    // A draft again: sent (or scheduled) anew, canceled no more.
    spec(broadcastDecider).given([created, scheduled, unscheduled]).when(send).then([started]);
    spec(broadcastDecider)
      .given([created, scheduled, unscheduled])
      .when(cancel)
      .thenFails('broadcast_not_scheduled');
    spec(broadcastDecider).given([created]).when(cancel).thenFails('broadcast_not_scheduled');
    // Sending: stopped (its emails not yet attempted are withdrawn by the expansion); sent or stopped: refused.
    const canceled: BroadcastEvent = {
      type: 'BroadcastCanceled',
      data: { broadcastId: 'bc_1', canceledAt: 'T3' },
    };
    spec(broadcastDecider).given([created, started]).when(cancel).then([canceled]);
    spec(broadcastDecider)
      .given([created, started, canceled])
      .when(cancel)
      .thenFails('broadcast_not_scheduled');
    const sent: BroadcastEvent = { type: 'BroadcastSent', data: { broadcastId: 'bc_1', sentAt: 'T3' } };
    spec(broadcastDecider)
      .given([created, started, sent])
      .when(cancel)
      .thenFails('broadcast_not_scheduled', /sent/);
    // A stopped broadcast records no more pages.
    spec(broadcastDecider)
      .given([created, started, canceled])
      .when({
        ...caller,
        type: 'RecordBatch',
        after: '',
        cursor: 'ct_9',
        queued: 1,
        skipped: none,
        last: true,
        at: 'T4',
      })
      .then([]);
  });

  it('starts a scheduled broadcast once it is due, with the plan it was sent under', () => {
    const start = (at: string) => ({ ...caller, type: 'StartSending' as const, at });
    spec(broadcastDecider).given([created, scheduled]).when(start('2026-09-01T23:59:59.999Z')).then([]);
    spec(broadcastDecider)
      .given([created, scheduled])
      .when(start('2026-09-02T00:00:00.000Z'))
      .then([
        {
          type: 'BroadcastSendingStarted',
          data: {
            broadcastId: 'bc_1',
            plan: 'free',
            startedAt: '2026-09-02T00:00:00.000Z',
            emailIds: 'contact-ordered',
          },
        },
      ]);
    // Neither one canceled back to a draft, nor one canceled for good (as earlier versions recorded it).
    const unscheduled: BroadcastEvent = {
      type: 'BroadcastUnscheduled',
      data: { broadcastId: 'bc_1', unscheduledAt: 'T3' },
    };
    const canceled: BroadcastEvent = {
      type: 'BroadcastCanceled',
      data: { broadcastId: 'bc_1', canceledAt: 'T3' },
    };
    for (const ended of [unscheduled, canceled])
      spec(broadcastDecider)
        .given([created, scheduled, ended])
        .when(start('2026-09-03T00:00:00.000Z'))
        .then([]);
  });

  it('records each step once, and the last one as sent', () => {
    const record = (after: string, cursor: string, last: boolean) => ({
      ...caller,
      type: 'RecordBatch' as const,
      after,
      cursor,
      queued: 2,
      skipped: none,
      last,
      at: 'T3',
    });
    spec(broadcastDecider)
      .given([created, started])
      .when(record('', 'con_2', false))
      .then([batch('', 'con_2', 2)]);
    // The same step again (a run resumed after a crash, or a second process): nothing.
    spec(broadcastDecider)
      .given([created, started, batch('', 'con_2', 2)])
      .when(record('', 'con_2', false))
      .then([]);
    spec(broadcastDecider)
      .given([created, started, batch('', 'con_2', 2)])
      .when(record('con_2', 'con_3', true))
      .then([
        batch('con_2', 'con_3', 2),
        { type: 'BroadcastSent', data: { broadcastId: 'bc_1', sentAt: 'T3' } },
      ]);
    // An audience with nothing after the cursor: only the end.
    spec(broadcastDecider)
      .given([created, started])
      .when(record('', '', true))
      .then([{ type: 'BroadcastSent', data: { broadcastId: 'bc_1', sentAt: 'T3' } }]);
  });

  itHidesFromOtherCallers(broadcastDecider, [created], { ...caller, type: 'DeleteBroadcast', at: 'T2' });
});

describe('broadcast content', () => {
  it('allows only `contact` and `unsubscribe_url`, and says where anything else is', () => {
    expect(() => checkBroadcastContent(content)).not.toThrow();
    expect(() =>
      checkBroadcastContent({
        ...content,
        html: '<a href="{{unsubscribe_url}}">{{contact.properties.x}}</a>',
      }),
    ).not.toThrow();
    expect(() => checkBroadcastContent({ ...content, text: 'line\n{{coupon}}' })).toThrow(
      '`text`: variable `coupon` at line 2, column 3 is not available',
    );
  });

  it('adds the impressum and the unsubscribe link, escaped and as written ($&), before </body>', () => {
    const footer = withFooter(
      { html: '<html><body><p>x</p></body></html>', text: 'x' },
      {
        company_name: 'A & B $& Co. GmbH',
        address: 'Hauptstr. 1, Berlin',
        country: 'DE',
        email: 'info@ab.test',
        vat_id: 'DE123456789',
      },
      'https://p.test/unsubscribe/t"1',
    );
    expect(footer.html).toBe(
      '<html><body><p>x</p><div style="margin-top:32px;font-size:12px;color:#666">A &amp; B $&amp; Co. GmbH<br>Hauptstr. 1, Berlin, DE<br>info@ab.test<br>VAT ID DE123456789<br><a href="https://p.test/unsubscribe/t&quot;1" data-postline-untracked>Unsubscribe</a></div></body></html>',
    );
    expect(footer.text).toBe(
      'x\n\n-- \nA & B $& Co. GmbH\nHauptstr. 1, Berlin, DE\ninfo@ab.test\nVAT ID DE123456789\nUnsubscribe: https://p.test/unsubscribe/t"1\n',
    );
    expect(withFooter({ html: null, text: null }, null, 'u')).toEqual({ html: null, text: null });
  });

  it('puts the preview text first, hidden and escaped: after <body …> in a document, else at the start', () => {
    const hidden = (text: string) => expect.stringContaining(`mso-hide:all">${text}</div>`);
    const doc = withPreheader('<html><BODY class="x"><p>hi</p></body></html>', 'Sale & <more>');
    expect(doc).toMatch(
      /^<html><BODY class="x"><div style="display:none;[^"]*">Sale &amp; &lt;more&gt;<\/div><p>hi<\/p>/,
    );
    expect(withPreheader('<p>hi</p>', 'Soon')).toEqual(hidden('Soon'));
    expect(withPreheader('<p>hi</p>', 'Soon').endsWith('</div><p>hi</p>')).toBe(true);
    expect(withPreheader('<p>hi</p>', null)).toBe('<p>hi</p>');
    expect(withPreheader('<p>hi</p>', undefined)).toBe('<p>hi</p>');
  });
});

describe('unsubscribe tokens', () => {
  const tokens = new UnsubscribeTokens(Buffer.alloc(32, 1).toString('base64'));
  it('name the email they were signed for, in any letter case, and fit a local part', () => {
    const token = tokens.sign('em_01jq3v0000abcdefghjkmnpqrs');
    expect(token).toMatch(/^em_01jq3v0000abcdefghjkmnpqrs-[0-9a-z]{16}$/);
    expect(`unsubscribe+${token}`.length).toBeLessThanOrEqual(64);
    expect(tokens.verify(token)).toBe('em_01jq3v0000abcdefghjkmnpqrs');
    expect(tokens.verify(token.toUpperCase())).toBe('em_01jq3v0000abcdefghjkmnpqrs');
  });
  it('carry HMAC-SHA-256 of the id under the derived key (RFC 2104)', () => {
    const secret = Buffer.alloc(32, 1);
    const key = createHash('sha256').update('postline unsubscribe\0').update(secret).digest();
    const id = 'em_01jq3v0000abcdefghjkmnpqrs';
    const mac = tokens.sign(id).split('-')[1];
    let bits = 0n;
    for (const c of mac) bits = bits * 32n + BigInt('0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c));
    expect(bits.toString(16).padStart(20, '0')).toBe(
      createHmac('sha256', key).update(id).digest().subarray(0, 10).toString('hex'),
    );
  });
  it('cannot be made for another email, or under another key', () => {
    const token = tokens.sign('em_01jq3v0000abcdefghjkmnpqrs');
    const mac = token.split('-')[1];
    expect(tokens.verify(`em_01jq3v0000abcdefghjkmnpqrt-${mac}`)).toBeNull();
    expect(new UnsubscribeTokens(Buffer.alloc(32, 2).toString('base64')).verify(token)).toBeNull();
    for (const bad of ['', '-', 'em_1', `${token}-x`, 'tpl_1-abcdefghjkmnpqrs'])
      expect(tokens.verify(bad)).toBeNull();
  });

  it('records how its emails get their ids when it starts; one started before that keeps the hashed ones', () => {
    const fold = (events: BroadcastEvent[]) =>
      events.reduce(broadcastDecider.evolve, broadcastDecider.initialState);
    expect(fold([created, started])).toMatchObject({
      status: 'sending',
      emailIds: 'contact-ordered',
    });
    const before: BroadcastEvent = {
      type: 'BroadcastSendingStarted',
      data: { broadcastId: 'bc_1', plan: 'pro', startedAt: 'T2' },
    };
    expect(fold([created, before])).toMatchObject({ emailIds: 'hashed' });
  });
});
