import { describe, expect, it } from 'vitest';
import {
  listUnsubscribeHeaders,
  namesListUnsubscribe,
  topicUnsubscribeAddress,
  withHeaderFields,
} from '../../domain/emails/list-unsubscribe.ts';

describe('the address a send about a topic carries an unsubscribe link for', () => {
  const email = (over: Partial<Parameters<typeof topicUnsubscribeAddress>[0]>) => ({
    topicId: 'top_1',
    to: [],
    cc: [],
    bcc: [],
    ...over,
  });

  it.each([
    ['one to, with a name', { to: ['Ann <Ann@Example.org>'] }, 'ann@example.org'],
    ['one bcc alone', { bcc: ['zed@example.org'] }, 'zed@example.org'],
    [
      'the same address in to and cc',
      { to: ['ann@example.org'], cc: ['ANN@example.org'] },
      'ann@example.org',
    ],
    ['two addresses', { to: ['ann@example.org', 'bob@example.org'] }, null],
    ['one to and one bcc', { to: ['ann@example.org'], bcc: ['bob@example.org'] }, null],
    ['no topic', { topicId: undefined, to: ['ann@example.org'] }, null],
  ])('given %s: %s', (_, over, expected) => {
    expect(topicUnsubscribeAddress(email(over))).toBe(expected);
  });
});

describe('the headers', () => {
  it('are RFC 8058’s one-click pair, the link before the mailto', () => {
    expect(listUnsubscribeHeaders('https://p.test/unsubscribe/t', 'unsubscribe+t@b.test')).toEqual({
      'List-Unsubscribe': '<https://p.test/unsubscribe/t>, <mailto:unsubscribe+t@b.test>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
  });

  it('are the sender’s own when it names List-Unsubscribe in any letter case', () => {
    expect(namesListUnsubscribe(['X-Mailer', 'LIST-UNSUBSCRIBE'])).toBe(true);
    expect(namesListUnsubscribe(['list-unsubscribe-post', 'list-id'])).toBe(false);
  });
});

describe('header fields added to a message', () => {
  const added = {
    'List-Unsubscribe': '<https://p.test/u>',
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };

  it('go at the end of its header section; the rest stays byte for byte', () => {
    const body = Buffer.from('\r\nHello\r\n\r\nbye \xe9\r\n', 'latin1');
    const message = Buffer.concat([Buffer.from('Subject: hi\r\nX-Long: a\r\n\tb\r\n'), body]);
    expect(withHeaderFields(message, added).toString('latin1')).toBe(
      'Subject: hi\r\nX-Long: a\r\n\tb\r\nList-Unsubscribe: <https://p.test/u>\r\n' +
        `List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n${body.toString('latin1')}`,
    );
  });

  it('go at its end when it has no body', () => {
    expect(withHeaderFields(Buffer.from('Subject: hi\r\n'), { 'List-Id': '<x>' }).toString()).toBe(
      'Subject: hi\r\nList-Id: <x>\r\n',
    );
  });
});
