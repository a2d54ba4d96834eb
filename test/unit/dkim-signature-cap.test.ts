import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { capDkimSignatures, withDkimSignaturesCapped } from '../../smtp/dkim-signature-cap.ts';

const signature = (i: number) => `DKIM-Signature: v=1; a=rsa-sha256; d=d${i}.test; s=s;\r\n\tbh=${i}; b=${i}`;
const lines = (...fields: string[]) => fields.join('\r\n');

const header = lines(
  signature(0),
  'Received: from a by b',
  signature(1),
  'dkim-signature : v=1; d=d2.test',
  signature(3),
  'From: Ann <ann@remote.test>',
  'DKIM-SIGNATURE:v=1; d=d4.test',
  signature(5),
  ' folded into the sixth',
  'Subject: six signatures',
);
const body = lines(
  '',
  'DKIM-Signature: a body line, not a header',
  '--b',
  'DKIM-Signature: v=1; d=part.test',
  '',
  'the end',
  '',
);

/** `header` with its first five signatures: the sixth and its folded line gone. */
const capped = lines(
  signature(0),
  'Received: from a by b',
  signature(1),
  'dkim-signature : v=1; d=d2.test',
  signature(3),
  'From: Ann <ann@remote.test>',
  'DKIM-SIGNATURE:v=1; d=d4.test',
  'Subject: six signatures',
);

describe('capDkimSignatures', () => {
  it('keeps the first signatures, any case and with spaces before the colon, and drops the rest whole', () => {
    expect(capDkimSignatures(Buffer.from(header, 'latin1'), 5).toString('latin1')).toBe(capped);
    expect(capDkimSignatures(Buffer.from(header, 'latin1'), 2).toString('latin1')).toBe(
      lines(
        signature(0),
        'Received: from a by b',
        signature(1),
        'From: Ann <ann@remote.test>',
        'Subject: six signatures',
      ),
    );
  });

  it('gives the same bytes back when there are no more than the cap, 8-bit bytes included', () => {
    const within = Buffer.concat([Buffer.from(`${signature(0)}\r\nSubject: `), Buffer.from([0xe9, 0xff])]);
    expect(capDkimSignatures(within, 1)).toBe(within);
    expect(capDkimSignatures(Buffer.from(header, 'latin1'), 6).toString('latin1')).toBe(header);
  });
});

describe('withDkimSignaturesCapped', () => {
  const through = async (message: string, at: number) => {
    const pieces = [message.slice(0, at), message.slice(at)].filter((p) => p.length > 0);
    const out = await buffer(
      withDkimSignaturesCapped(Readable.from(pieces.map((p) => Buffer.from(p, 'latin1')))),
    );
    return out.toString('latin1');
  };

  it('caps the message header however the message is cut, and passes its body and parts as they are', async () => {
    const message = `${header}\r\n${body}`;
    for (let at = 0; at <= message.length; at++)
      expect(await through(message, at)).toBe(`${capped}\r\n${body}`);
  });

  it('caps a message that is all header, and leaves one without a header or within the cap alone', async () => {
    expect(await through(header, 7)).toBe(capped);
    const headless = `\r\n${signature(0)}\r\n${signature(1)}\r\n`;
    expect(await through(headless, 1)).toBe(headless);
    const within = `${signature(0)}\r\nSubject: one\r\n\r\nbody\r\n`;
    expect(await through(within, 3)).toBe(within);
  });

  it('ends with its source: a reader that gives up destroys the source, a source that fails fails it', async () => {
    const given = new Readable({ read() {} });
    given.push(Buffer.from(`${signature(0)}\r\n`));
    const abandoned = withDkimSignaturesCapped(given);
    abandoned.destroy();
    await expect(finished(abandoned)).rejects.toThrow();
    expect(given.destroyed).toBe(true);

    const failing = new Readable({ read() {} });
    const capped = withDkimSignaturesCapped(failing);
    failing.destroy(new Error('the spool file is gone'));
    await expect(finished(capped)).rejects.toThrow('the spool file is gone');
  });
});
