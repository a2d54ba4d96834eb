import { describe, expect, it } from 'vitest';
import { readReport } from '../../smtp/reports.ts';
import { arfComplaint, eximTextBounce, gmailDsn, type Original, postfixDsn } from '../fixtures/reports.ts';

const original: Original = {
  from: 'Acme <news@acme.test>',
  to: 'ann@rcpt.test',
  subject: 'Hello',
  messageId: '<em_01abc@acme.test>',
  returnPath: 'b+em_01abc@bounces.acme.test',
};
const read = (raw: string) => readReport(Buffer.from(raw));

describe('readReport', () => {
  it('reads a Postfix DSN: the failed recipient, its status and reply, and the email its headers name', async () => {
    expect(await read(postfixDsn(original))).toEqual({
      kind: 'bounce',
      recipients: [
        {
          recipient: 'ann@rcpt.test',
          action: 'failed',
          status: '5.1.1',
          diagnostic: 'smtp; 550 5.1.1 <ann@rcpt.test>: Recipient address rejected: User unknown',
        },
      ],
      text: expect.stringContaining('could not'),
      originalEmailId: 'em_01abc',
    });
  });

  it('reads a Gmail DSN with its folded diagnostic and the original attached whole', async () => {
    const report = await read(gmailDsn(original));
    expect(report).toMatchObject({
      kind: 'bounce',
      recipients: [{ recipient: 'ann@rcpt.test', status: '5.1.1' }],
      originalEmailId: 'em_01abc',
    });
    expect(report.kind === 'bounce' && report.recipients[0].diagnostic).toContain(
      'does not exist. 550 5.1.1',
    );
  });

  it('reads a plain-text bounce as far as it can: the status and the reply, the recipient left to the caller', async () => {
    expect(await read(eximTextBounce(original))).toMatchObject({
      kind: 'bounce',
      recipients: [{ recipient: '', status: '5.1.1', diagnostic: '550 5.1.1 mailbox unavailable' }],
    });
  });

  it('reads an ARF complaint: the feedback type, the complaining recipient, the email', async () => {
    expect(await read(arfComplaint(original, 'fbl@mx.test'))).toEqual({
      kind: 'complaint',
      feedbackType: 'abuse',
      recipient: 'ann@rcpt.test',
      originalEmailId: 'em_01abc',
    });
  });

  it('reads a "delayed" DSN with its transient status, a "delivered" one as no failure, and anything else as other', async () => {
    const delayed = postfixDsn(original, '4.4.1').replace('Action: failed', 'Action: delayed');
    expect(await read(delayed)).toMatchObject({
      kind: 'bounce',
      recipients: [{ recipient: 'ann@rcpt.test', status: '4.4.1' }],
    });
    const relayed = postfixDsn(original, '2.0.0').replace('Action: failed', 'Action: relayed');
    expect(await read(relayed)).toMatchObject({ kind: 'bounce', recipients: [] });
    expect(await read('Subject: hello\r\n\r\nJust a note.\r\n')).toEqual({ kind: 'other' });
    expect(await read('Content-Type: multipart/report; boundary="x"\r\n\r\ngarbage')).toEqual({
      kind: 'other',
    });
  });

  it.each([
    ['a display name', 'Bob Smith <bob@rcpt.test>'],
    ['a quoted display name with a comma', '"Smith, Bob" <bob@rcpt.test>'],
    ['an encoded display name', '=?UTF-8?B?Qm9iIFNtw6l0aA==?= <bob@rcpt.test>'],
  ])(
    'reads the complaining recipient from the quoted To with %s when the ARF has no Original-Rcpt-To',
    async (_, to) => {
      const arf = arfComplaint({ ...original, to }, 'fbl@mx.test').replace(/Original-Rcpt-To: .*\r\n/, '');
      expect(await read(arf)).toMatchObject({ kind: 'complaint', recipient: 'bob@rcpt.test' });
    },
  );

  it('reads no complaining recipient from a quoted To naming several', async () => {
    const arf = arfComplaint({ ...original, to: 'a@rcpt.test, Bob <bob@rcpt.test>' }, 'fbl@mx.test');
    expect(await read(arf.replace(/Original-Rcpt-To: .*\r\n/, ''))).toMatchObject({ recipient: undefined });
  });

  it("keeps a DSN's Action with each recipient: a failed 4.x.x is a queue that gave up, not a delay", async () => {
    const failed = postfixDsn(
      original,
      '4.4.1',
      'connect to mx.rcpt.test[192.0.2.1]:25: Connection timed out',
    );
    expect(await read(failed)).toMatchObject({
      kind: 'bounce',
      recipients: [{ recipient: 'ann@rcpt.test', action: 'failed', status: '4.4.1' }],
    });
    const delayed = failed.replace('Action: failed', 'Action: delayed');
    expect(await read(delayed)).toMatchObject({ recipients: [{ action: 'delayed', status: '4.4.1' }] });
  });

  /** An out-of-office reply to the return path, as a vacation responder sends it. */
  const outOfOffice = (marker: string) =>
    [
      'From: Ann <ann@rcpt.test>',
      `To: ${original.returnPath}`,
      'Subject: Automatic reply: Hello',
      ...(marker ? [marker] : []),
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'I am out of the office, returning 5.1.26. For urgent matters call the desk.',
      '',
    ].join('\r\n');

  it.each([
    'Auto-Submitted: auto-replied',
    'Auto-Submitted: auto-generated',
    'X-Autoreply: yes',
    'X-Autorespond: Out of office',
    'Precedence: auto_reply',
  ])('reads an auto-reply marked "%s" (RFC 3834) as no report', async (marker) => {
    expect(await read(outOfOffice(marker))).toEqual({ kind: 'other' });
  });

  it('reads a plain-text bounce from the mail system as a bounce though it is marked auto-replied', async () => {
    // Exim and Postfix mark their own bounces "Auto-Submitted: auto-replied" (RFC 3834 section 5).
    const exim = eximTextBounce(original).replace(
      'Content-Type:',
      'Auto-Submitted: auto-replied\r\nContent-Type:',
    );
    expect(await read(exim)).toMatchObject({ kind: 'bounce', recipients: [{ status: '5.1.1' }] });
    const postfix = postfixDsn(original).replace(
      'MIME-Version:',
      'Auto-Submitted: auto-replied\r\nMIME-Version:',
    );
    expect(await read(postfix)).toMatchObject({ kind: 'bounce', recipients: [{ status: '5.1.1' }] });
  });

  it('reads the status of a plain-text bounce only where it follows a reply code', async () => {
    expect(await read(outOfOffice(''))).toMatchObject({
      kind: 'bounce',
      recipients: [{ recipient: '', status: '5.0.0' }],
    });
    const transient = eximTextBounce(original).replace(
      '550 5.1.1 mailbox unavailable',
      '452-4.2.2 mailbox full',
    );
    expect(await read(transient)).toMatchObject({
      recipients: [{ status: '4.2.2', diagnostic: '452-4.2.2 mailbox full' }],
    });
  });
});
