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
});
