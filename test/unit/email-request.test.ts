import { describe, expect, it } from 'vitest';
import { sendEmailInput, updateEmailInput } from '../../domain/emails/request.ts';

const base = { from: 'hi@acme.test', to: 'ann@example.org', subject: 's', text: 't' };

describe("the send request: Resend's names beside Postline's", () => {
  it('takes scheduled_at for send_at, in a send and in an update', () => {
    const at = '2026-12-01T10:00:00Z';
    expect(sendEmailInput.parse({ ...base, scheduled_at: at })).toEqual({ ...base, send_at: at });
    expect(updateEmailInput.parse({ scheduled_at: at })).toEqual({ send_at: at });
  });

  it('refuses both names at once, naming the alias', () => {
    const r = sendEmailInput.safeParse({
      ...base,
      send_at: '2026-12-01T10:00:00Z',
      scheduled_at: '2026-12-02T10:00:00Z',
    });
    expect(r.success).toBe(false);
    expect(r.error?.issues).toEqual([
      expect.objectContaining({
        path: ['scheduled_at'],
        message: 'cannot be given with `send_at` (it is Resend’s name for it)',
      }),
    ]);
  });

  it('takes tags as strings and as {name, value}, kept as name:value', () => {
    expect(
      sendEmailInput.parse({
        ...base,
        tags: ['plain', { name: 'category', value: 'welcome' }, { name: 'solo' }],
      }).tags,
    ).toEqual(['plain', 'category:welcome', 'solo']);
    expect(sendEmailInput.safeParse({ ...base, tags: [{ name: 'bad name', value: 'x' }] }).success).toBe(
      false,
    );
    expect(sendEmailInput.safeParse({ ...base, tags: [{ name: 'a', value: 'b', extra: 1 }] }).success).toBe(
      false,
    );
  });

  it('takes template: {id, variables} for template_id and template_data', () => {
    const parsed = sendEmailInput.parse({
      from: 'hi@acme.test',
      to: 'ann@example.org',
      template: { id: 'tmpl_01abc', variables: { name: 'Ann' } },
    });
    expect(parsed).toMatchObject({ template_id: 'tmpl_01abc', template_data: { name: 'Ann' } });
    expect(parsed).not.toHaveProperty('template');
    // Anything else in `template` leaves it as it is, and the strict schema refuses it.
    expect(sendEmailInput.safeParse({ ...base, template: { id: 'tmpl_01abc', other: 1 } }).success).toBe(
      false,
    );
  });
});

describe('the send request: a list of addresses', () => {
  const messageOf = (to: unknown) => sendEmailInput.safeParse({ ...base, to }).error?.issues[0].message;
  const tooMany = 'must have at most 50 addresses (and at most 50 recipients in to, cc and bcc)';

  it('names the rule the value broke in a branch of its own type', () => {
    expect(messageOf(Array.from({ length: 51 }, (_, i) => `r${i}@example.org`))).toBe(tooMany);
    // 999 entries: a string's limit of 998 characters, measured on the list's length, is not the rule broken.
    expect(messageOf(Array.from({ length: 999 }, (_, i) => `r${i}@example.org`))).toBe(tooMany);
    expect(messageOf('x'.repeat(999))).toBe('must be at most 998 characters');
  });

  it('says what the field takes when the value is of neither type', () => {
    expect(messageOf(5)).toBe('must be an address or an array of addresses');
    expect(messageOf([5])).toBe('must be an address or an array of addresses');
  });
});
