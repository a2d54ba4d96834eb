import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { headerField, joinMessage, splitMessage } from '../../smtp/message-headers.ts';
import { readMessage } from '../../smtp/message-reader.ts';

/** The message as smtp-server hands it over, in chunks cut where the test says. */
const stream = (...chunks: string[]) => Readable.from(chunks.map((c) => Buffer.from(c, 'latin1')));

describe('readMessage', () => {
  it('keeps a well-formed message byte for byte, however it is cut into chunks', async () => {
    const message = 'Subject: hi\r\n\r\nline one\r\nline two\r\n';
    for (let cut = 0; cut <= message.length; cut++) {
      const read = await readMessage(stream(message.slice(0, cut), message.slice(cut)), false);
      expect(read).toEqual({ bytes: Buffer.from(message) });
    }
  });

  it('keeps nothing past the size limit (smtp-server flags it and passes the rest on), and drains the rest', async () => {
    const line = Buffer.from(`${'x'.repeat(998)}\r\n`);
    let chunks = 0;
    let kept = 0;
    const data: Readable & { sizeExceeded?: boolean } = new Readable({
      read() {
        if (chunks === 2) data.sizeExceeded = true;
        this.push(chunks++ < 1000 ? line : null);
      },
    });
    const read = await readMessage(data, false, async (chunk) => {
      kept += chunk.length;
    });
    expect(read).toEqual({ bytes: Buffer.alloc(0), problem: 'messageTooBig' });
    expect(kept).toBeLessThanOrEqual(3 * line.length);
    expect(chunks).toBe(1001); // drained to its end (1,000 lines and the end)
  });

  it.each([
    ['a bare LF', 'a\nb\r\n', 'bareLineEnding'],
    ['a bare CR', 'a\rb\r\n', 'bareLineEnding'],
    ['a CR at the very end', 'a\r\nb\r', 'bareLineEnding'],
    ['a NUL', 'a\0b\r\n', 'nulByte'],
    ['a line of 999 characters', `${'x'.repeat(999)}\r\n`, 'lineTooLong'],
    ['8-bit data', 'caf\u00e9\r\n', 'eightBitUndeclared'],
  ])('refuses %s, split across chunks too', async (_, message, problem) => {
    for (let cut = 0; cut <= message.length; cut++) {
      const read = await readMessage(stream(message.slice(0, cut), message.slice(cut)), false);
      expect(read).toEqual({ bytes: Buffer.alloc(0), problem });
    }
  });

  it('takes a line of exactly 998 characters, and 8-bit data when BODY=8BITMIME was declared', async () => {
    const long = `${'x'.repeat(998)}\r\n`;
    expect((await readMessage(stream(long), false)).problem).toBeUndefined();
    expect(await readMessage(stream('caf\u00e9\r\n'), true)).toEqual({
      bytes: Buffer.from('caf\u00e9\r\n', 'latin1'),
    });
  });
});

describe('splitMessage', () => {
  it('reads folded fields, and joins back to the same bytes', () => {
    const raw = Buffer.from('From: a@x.test\r\nSubject: one\r\n two\r\nBcc: b@x.test\r\n\r\nbody\r\n');
    const split = splitMessage(raw);
    expect(split.fields.map((f) => [f.name, f.value])).toEqual([
      ['from', 'a@x.test'],
      ['subject', 'one two'],
      ['bcc', 'b@x.test'],
    ]);
    expect(split.body.toString()).toBe('\r\nbody\r\n');
    expect(joinMessage(split)).toEqual(raw);
    const withoutBcc = {
      ...split,
      fields: [headerField('X-New', 'v'), ...split.fields.filter((f) => f.name !== 'bcc')],
    };
    expect(joinMessage(withoutBcc).toString()).toBe(
      'X-New: v\r\nFrom: a@x.test\r\nSubject: one\r\n two\r\n\r\nbody\r\n',
    );
  });

  it('keeps 8-bit header bytes as they are', () => {
    const raw = Buffer.from('Subject: caf\u00e9 \u2615\r\n\r\nx\r\n', 'utf8');
    expect(joinMessage(splitMessage(raw))).toEqual(raw);
  });

  it('takes a message without a body as headers only', () => {
    const raw = Buffer.from('Subject: only\r\n');
    expect(splitMessage(raw).fields.map((f) => f.name)).toEqual(['subject']);
    expect(joinMessage(splitMessage(raw))).toEqual(raw);
  });
});
