import type { Schema } from '../../api.ts';

type BroadcastJson = Schema<'Broadcast'>;

export interface FormState {
  name: string;
  audience_id: string;
  topic_id: string;
  from: string;
  reply_to: string;
  subject: string;
  useTemplate: boolean;
  html: string;
  text: string;
  template_id: string;
}
export const EMPTY: FormState = {
  name: '',
  audience_id: '',
  topic_id: '',
  from: '',
  reply_to: '',
  subject: '',
  useTemplate: false,
  html: '',
  text: '',
  template_id: '',
};
export const FIELDS = [
  'name',
  'audience_id',
  'topic_id',
  'from',
  'reply_to',
  'subject',
  'html',
  'text',
  'template_id',
  'send_at',
];

export function formOf(b: BroadcastJson): FormState {
  return {
    name: b.name,
    audience_id: b.audience_id,
    topic_id: b.topic_id ?? '',
    from: b.from,
    reply_to: b.reply_to.join(', '),
    subject: b.subject ?? '',
    useTemplate: b.template_id !== null,
    html: b.html ?? '',
    text: b.text ?? '',
    template_id: b.template_id ?? '',
  };
}

/** The request body for a form: every field, so a PATCH makes the draft exactly what the form shows. */
export function bodyOf(f: FormState) {
  return {
    name: f.name,
    audience_id: f.audience_id,
    topic_id: f.topic_id || null,
    from: f.from,
    reply_to: f.reply_to
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    subject: f.subject || null,
    ...(f.useTemplate
      ? { template_id: f.template_id || null, html: null, text: null }
      : { template_id: null, html: f.html || null, text: f.text || null }),
  };
}
