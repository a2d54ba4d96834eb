import { describe, expect, it } from 'vitest';
import { MIME_LIMITS, MimeShape, mimeShapeProblem } from '../../domain/received-emails/mime-shape.ts';
import { spamScore } from '../../domain/received-emails/spam-score.ts';

const crlf = (lines: string[]) => Buffer.from(`${lines.join('\r\n')}\r\n`);

/** A multipart message of `count` text parts. */
const manyParts = (count: number) =>
  crlf([
    'From: a@x.test',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    ...Array.from({ length: count }, (_, i) => ['--b', 'Content-Type: text/plain', '', `part ${i}`]).flat(),
    '--b--',
  ]);

/** Multiparts nested `depth` deep, each level with its own boundary. */
function nested(depth: number): Buffer {
  const lines = ['From: a@x.test', `Content-Type: multipart/mixed; boundary="b0"`, ''];
  for (let i = 1; i < depth; i++)
    lines.push(`--b${i - 1}`, `Content-Type: multipart/mixed; boundary="b${i}"`, '');
  lines.push(`--b${depth - 1}`, 'Content-Type: text/plain', '', 'deep');
  for (let i = depth - 1; i >= 0; i--) lines.push(`--b${i}--`);
  return crlf(lines);
}

/** Messages attached inside messages, `depth` deep. */
function attachedMessages(depth: number): Buffer {
  const lines = ['From: a@x.test'];
  for (let i = 0; i < depth; i++) lines.push('Content-Type: message/rfc822', '', 'From: b@x.test');
  lines.push('Content-Type: text/plain', '', 'innermost');
  return crlf(lines);
}

describe('the MIME shape of a received message', () => {
  it('passes ordinary messages: single part, multipart/alternative with an attachment', () => {
    expect(mimeShapeProblem(crlf(['From: a@x.test', 'Subject: hi', '', 'Hello']))).toBeUndefined();
    expect(mimeShapeProblem(manyParts(3))).toBeUndefined();
    expect(mimeShapeProblem(nested(5))).toBeUndefined();
  });

  it(`counts parts: ${MIME_LIMITS.parts} pass, one more does not, and neither do 10,000`, () => {
    expect(mimeShapeProblem(manyParts(MIME_LIMITS.parts - 1))).toBeUndefined();
    expect(mimeShapeProblem(manyParts(MIME_LIMITS.parts))).toBe('tooManyParts');
    expect(mimeShapeProblem(manyParts(10_000))).toBe('tooManyParts');
  });

  it(`measures nesting, of multiparts and of attached messages: ${MIME_LIMITS.depth} levels pass, 100 do not`, () => {
    expect(mimeShapeProblem(nested(MIME_LIMITS.depth))).toBeUndefined();
    expect(mimeShapeProblem(nested(MIME_LIMITS.depth + 1))).toBe('tooDeep');
    expect(mimeShapeProblem(nested(100))).toBe('tooDeep');
    expect(mimeShapeProblem(attachedMessages(MIME_LIMITS.depth))).toBeUndefined();
    expect(mimeShapeProblem(attachedMessages(100))).toBe('tooDeep');
  });

  it('a boundary line of an outer multipart closes the parts open inside it', () => {
    // Inner multiparts that are never closed: each new outer part ends the one before, so depth stays 2.
    const lines = ['From: a@x.test', 'Content-Type: multipart/mixed; boundary="outer"', ''];
    for (let i = 0; i < 50; i++)
      lines.push(
        '--outer',
        `Content-Type: multipart/alternative; boundary="in${i}"`,
        '',
        `--in${i}`,
        '',
        'x',
      );
    lines.push('--outer--');
    expect(mimeShapeProblem(crlf(lines))).toBeUndefined();
  });

  it('measures the same in pieces of any size as whole, lines cut anywhere', () => {
    const inPieces = (raw: Buffer, size: number) => {
      const shape = new MimeShape();
      for (let i = 0; i < raw.length; i += size) shape.push(raw.subarray(i, i + size));
      return shape.problem;
    };
    for (const [raw, problem] of [
      [manyParts(MIME_LIMITS.parts - 1), undefined],
      [manyParts(MIME_LIMITS.parts), 'tooManyParts'],
      [nested(MIME_LIMITS.depth), undefined],
      [nested(MIME_LIMITS.depth + 1), 'tooDeep'],
      [attachedMessages(100), 'tooDeep'],
    ] as const) {
      for (const size of [1, 7, 64, 4096]) expect([size, inPieces(raw, size)]).toEqual([size, problem]);
    }
  });

  it('reads a base64 or quoted-printable attached message as data, not as a header block (as mailparser does)', () => {
    const base64 =
      Buffer.alloc(100_000, 7)
        .toString('base64')
        .match(/.{1,76}/g) ?? [];
    for (const encoding of ['base64', 'BASE64 (sent so by a client)', 'quoted-printable'])
      expect([
        encoding,
        mimeShapeProblem(
          crlf([
            'From: a@x.test',
            'Content-Type: multipart/mixed; boundary="b"',
            '',
            '--b',
            'Content-Type: text/plain',
            '',
            'see attached',
            '--b',
            'Content-Type: message/rfc822',
            `Content-Transfer-Encoding: ${encoding}`,
            '',
            ...base64,
            '--b--',
          ]),
        ),
      ]).toEqual([encoding, undefined]);
    // Encoded, it opens no level; unencoded (7bit, or no Content-Transfer-Encoding) it does.
    const attached = (encoding: string) => {
      const lines = ['From: a@x.test'];
      for (let i = 0; i < 100; i++)
        lines.push(
          'Content-Type: message/rfc822',
          `Content-Transfer-Encoding: ${encoding}`,
          '',
          'From: b@x.test',
        );
      return crlf([...lines, '', 'innermost']);
    };
    expect(mimeShapeProblem(attached('base64'))).toBeUndefined();
    expect(mimeShapeProblem(attached('7bit'))).toBe('tooDeep');
  });

  it('takes a delimiter line inside a header block as a delimiter: the part ends there', () => {
    const headers = (n: number) => Array.from({ length: n }, (_, i) => `X-Filler-${i}: ${'y'.repeat(40)}`);
    // Two parts of 40 KB of header lines each, no blank line after them: two header blocks, neither too big.
    const cut = crlf([
      'From: a@x.test',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      ...headers(700),
      '--b',
      ...headers(700),
      '--b--',
    ]);
    expect(mimeShapeProblem(cut)).toBeUndefined();
    // Each such line is a part of its own, counted.
    const parts = crlf([
      'From: a@x.test',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      ...Array.from({ length: MIME_LIMITS.parts }, () => ['--b', 'X-A: 1']).flat(),
    ]);
    expect(mimeShapeProblem(parts)).toBe('tooManyParts');
  });

  it('limits each header block', () => {
    const long = Array.from({ length: 2000 }, (_, i) => `X-Filler-${i}: ${'y'.repeat(40)}`);
    expect(mimeShapeProblem(crlf(['From: a@x.test', ...long, '', 'body']))).toBe('headerTooBig');
  });
});

describe("Postline's spam score", () => {
  const pass = { result: 'pass', detail: null };
  const fail = { result: 'fail', detail: null };
  const clean = {
    authentication: { spf: pass, dkim: pass, dmarc: pass, arc: { result: 'none', detail: null } },
    hasFrom: true,
    hasDate: true,
    hasMessageId: true,
    subject: 'Your invoice',
    hasText: true,
    hasHtml: true,
  };

  it('is 0 for authenticated, well-formed mail', () => expect(spamScore(clean)).toBe(0));

  it('adds the points of each rule it breaks', () => {
    expect(spamScore({ ...clean, authentication: { ...clean.authentication, dmarc: fail } })).toBe(3);
    expect(
      spamScore({
        ...clean,
        authentication: { ...clean.authentication, spf: fail, dkim: fail, dmarc: fail },
        hasMessageId: false,
        subject: 'WIN A PRIZE NOW',
        hasText: false,
      }),
    ).toBe(2 + 1.5 + 3 + 1 + 1 + 0.5);
  });
});
