import { describe, expect, it } from 'vitest';
import { fromResendPlaceholders } from '../../domain/broadcasts/resend-placeholders.ts';

describe('Resend’s placeholders in a broadcast', () => {
  it.each([
    ['{{{FIRST_NAME}}}', '{{contact.first_name}}'],
    ['{{{LAST_NAME}}} {{{EMAIL}}}', '{{contact.last_name}} {{contact.email}}'],
    ['<a href="{{{RESEND_UNSUBSCRIBE_URL}}}">x</a>', '<a href="{{unsubscribe_url}}">x</a>'],
    [
      'Hi {{{ FIRST_NAME | dear reader }}}!',
      'Hi {{#if contact.first_name}}{{contact.first_name}}{{else}}dear reader{{/if}}!',
    ],
    ['{{{FIRST_NAME|}}}', '{{#if contact.first_name}}{{contact.first_name}}{{else}}{{/if}}'],
  ])('writes %j as %j', (resend, postline) => {
    expect(fromResendPlaceholders(resend)).toBe(postline);
  });

  it('leaves everything else as it is: Postline’s own variables, other names, braces in a fallback', () => {
    for (const source of [
      '{{contact.first_name}}',
      '{{{unsubscribe_url}}}',
      '{{{first_name}}}',
      '{{{COMPANY|Acme}}}',
      '{{{FIRST_NAME|a}b}}}',
      '{{FIRST_NAME}}',
    ])
      expect(fromResendPlaceholders(source)).toBe(source);
  });
});
