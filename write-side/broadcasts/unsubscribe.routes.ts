import express from 'express';
import Handlebars from 'handlebars';
import type { Services } from '../../platform/services.ts';
import { setContactTopics } from '../contacts/contact.commands.ts';
import {
  contactGone,
  targetContactId,
  type UnsubscribeTarget,
  unsubscribeFrom,
  unsubscribeTarget,
} from './unsubscribe.commands.ts';

const esc = (s: string) => Handlebars.Utils.escapeExpression(s);

/** No script, nothing from elsewhere; forms post only back here. */
const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Robots-Tag': 'noindex',
};

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.5rem 1rem;cursor:pointer}fieldset{border:1px solid #ccc;margin:1.5rem 0}
label{display:block;margin:.25rem 0}</style></head>
<body><h1>${esc(title)}</h1>${body}</body></html>`;

const unknownLink = () =>
  page(
    'This link does not work',
    '<p>The unsubscribe link is incomplete or no longer valid. Use the link in the most recent email you received, or reply to that email.</p>',
  );

/**
 * A deleted contact's link, whatever was asked: nothing is sent to it any more, as after a one-click unsubscribe.
 * No personal data: the contact's is forgotten, and the link may be held by someone else.
 */
const goneContact = () =>
  page('You are unsubscribed', '<p>You will receive no more emails from this list.</p>');

/**
 * An address shown to whoever holds the link: its first letter and its domain (`u***@example.org`), enough for
 * its owner to tell which of their addresses it is, and little to anyone the link reached otherwise.
 */
function maskedAddress(address: string): string {
  const at = address.lastIndexOf('@');
  return `${[...address.slice(0, Math.max(0, at))][0] ?? ''}***${address.slice(at)}`;
}

/** The form's fields: `List-Unsubscribe=One-Click` (RFC 8058) as urlencoded or multipart, or topic preferences. */
function formOf(req: express.Request): { oneClick: boolean; preferences?: Set<string> } {
  const body = typeof req.body === 'string' ? req.body : '';
  if (req.is('multipart/form-data'))
    return { oneClick: /name="List-Unsubscribe"\r?\n\r?\nOne-Click/i.test(body) };
  const form = new URLSearchParams(body);
  if (form.get('List-Unsubscribe') === 'One-Click') return { oneClick: true };
  if (form.get('action') === 'preferences')
    return { oneClick: false, preferences: new Set(form.getAll('topic')) };
  return { oneClick: false };
}

/**
 * The unsubscribe link of broadcast emails and of sends about a topic, outside /v1 and without an API key:
 * `GET /unsubscribe/<token>` only shows a page (a confirm button and the contact's topic preferences), since link
 * scanners fetch every URL of a message; `POST` with `List-Unsubscribe=One-Click` (RFC 8058: what a mailbox
 * provider's unsubscribe button sends, and the page's button) unsubscribes at once. A token that does not verify
 * gets a friendly page, never an error dump; a broadcast's deleted contact's link (deleted before the request, or
 * during its write) gets `goneContact()`. The page shows the address the email was sent to, masked, never the
 * contact's address now (docs/broadcasts.md).
 */
export function mountUnsubscribe(app: express.Express, services: Services): void {
  const target = (token: string) => unsubscribeTarget(services, token);
  const describe = async (t: UnsubscribeTarget) => {
    const topic = t.topicId ? await services.lookUps.findTopic(services.db, t.meta, t.topicId) : null;
    return topic ? `emails about “${topic.name}”` : `all emails from ${t.from}`;
  };

  app.get('/unsubscribe/:token', async (req, res) => {
    res.set(PAGE_HEADERS);
    const t = await target(req.params.token);
    if (!t) return void res.status(404).send(unknownLink());
    // A broadcast's contact not found is one deleted since; a send about a topic names an address, which may
    // be no contact (yet): it gets the button alone.
    const contactId = await targetContactId(services, t);
    const contact = contactId ? await services.lookUps.findContact(services.db, t.meta, contactId) : null;
    if (!contact && t.contactId) return void res.send(goneContact());
    const topics = contact
      ? (await services.lookUps.contactTopics(services.db, t.meta, contactId!)).data
      : [];
    const preferences = topics.length
      ? `<form method="post"><fieldset><legend>Or choose what you receive</legend>
${topics
  .map(
    (topic) =>
      `<label><input type="checkbox" name="topic" value="${esc(topic.id)}"${topic.subscription === 'opt_in' ? ' checked' : ''}> ${esc(topic.name)}${topic.description ? ` — ${esc(topic.description)}` : ''}</label>`,
  )
  .join('\n')}
<input type="hidden" name="action" value="preferences"><button type="submit">Save preferences</button></fieldset></form>`
      : '';
    res.send(
      page(
        contact?.unsubscribed ? 'You are unsubscribed' : 'Unsubscribe',
        `${t.sentTo ? `<p>${esc(maskedAddress(t.sentTo))}</p>\n` : ''}<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">
<p>Stop receiving ${esc(await describe(t))}?</p><button type="submit">Unsubscribe</button></form>${preferences}`,
      ),
    );
  });

  app.post('/unsubscribe/:token', express.text({ type: () => true, limit: '16kb' }), async (req, res) => {
    res.set(PAGE_HEADERS);
    const t = await target(req.params.token);
    if (!t) return void res.status(404).send(unknownLink());
    const form = formOf(req);
    if (form.oneClick) {
      if ((await unsubscribeFrom(services, t)).gone) return void res.send(goneContact());
      return void res.send(
        page('You are unsubscribed', `<p>You will no longer receive ${esc(await describe(t))}.</p>`),
      );
    }
    // Preferences are a contact's: a send about a topic to an address that is no contact shows none.
    const contactId = form.preferences ? await targetContactId(services, t) : null;
    if (form.preferences && contactId) {
      if (!(await services.lookUps.findContact(services.db, t.meta, contactId)))
        return void res.send(goneContact());
      const topics = (await services.lookUps.contactTopics(services.db, t.meta, contactId)).data;
      const choices = topics.map((topic) => ({
        topicId: topic.id,
        subscription: form.preferences!.has(topic.id) ? ('opt_in' as const) : ('opt_out' as const),
      }));
      // Deleted between the look-up and the write: the same page as a deleted contact's.
      // The topics left here are the email's (and its broadcast's) unsubscribes, as the one-click's are.
      const saved = await setContactTopics(services, t.meta, contactId, choices, {
        broadcastId: t.broadcastId,
        emailId: t.emailId,
      }).then(
        () => true,
        (error) => {
          if (contactGone(error)) return false;
          throw error;
        },
      );
      if (!saved) return void res.send(goneContact());
      return void res.send(page('Preferences saved', '<p>Your choices are saved.</p>'));
    }
    res
      .status(400)
      .send(
        page(
          'Nothing was changed',
          '<p>This form was not understood. Open the link from your email again.</p>',
        ),
      );
  });
}
