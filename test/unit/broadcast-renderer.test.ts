import { describe, expect, it } from 'vitest';
import type { BroadcastContent } from '../../domain/broadcasts/broadcast.events.ts';
import { renderer } from '../../processes/broadcasts/broadcast-email.ts';

const content: BroadcastContent = {
  name: 'News',
  audienceId: 'aud_1',
  topicId: null,
  from: 'Acme <news@acme.test>',
  replyTo: [],
  subject: 'Hi {{contact.first_name}}',
  html: '<p>{{contact.first_name}}</p>',
  text: null,
  templateId: null,
};
const data = {
  contact: { email: 'tess@example.org', first_name: 'Tess', last_name: null, properties: {} },
  unsubscribe_url: 'https://postline.test/unsubscribe/x',
};

describe('the text of a broadcast', () => {
  it('renders its own sources when it has no template', () => {
    expect(renderer('bc_1', content, null)(data)).toEqual({
      subject: 'Hi Tess',
      html: '<p>Tess</p>',
      text: null,
    });
  });

  it('refuses a template broadcast without the template’s version rather than render its blank sources', () => {
    const templated = { ...content, subject: null, html: null, templateId: 'tmpl_1' };
    expect(() => renderer('bc_1', templated, null)).toThrow(
      'Broadcast bc_1: template tmpl_1 has no published version to render',
    );
  });
});
