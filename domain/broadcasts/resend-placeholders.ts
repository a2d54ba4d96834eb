/**
 * Resend's placeholders in a broadcast's sources (`{{{FIRST_NAME|there}}}`, `{{{RESEND_UNSUBSCRIBE_URL}}}`), as
 * its editor and SDK examples write them, each the variable a Postline broadcast renders with. Its fallback, the
 * text after `|`, stands when the contact has no such value; it holds no braces and is kept as written, trimmed.
 */
const VARIABLES: Record<string, string> = {
  FIRST_NAME: 'contact.first_name',
  LAST_NAME: 'contact.last_name',
  EMAIL: 'contact.email',
  RESEND_UNSUBSCRIBE_URL: 'unsubscribe_url',
};

const PLACEHOLDER = /\{\{\{\s*(FIRST_NAME|LAST_NAME|EMAIL|RESEND_UNSUBSCRIBE_URL)\s*(?:\|([^{}]*))?\}\}\}/g;

/**
 * A source with Resend's placeholders written as Postline's Handlebars: `{{contact.first_name}}`, or with a
 * fallback `{{#if contact.first_name}}{{contact.first_name}}{{else}}there{{/if}}`. Values are escaped in HTML as
 * every variable of Postline's is. Anything else stays as it is.
 */
export function fromResendPlaceholders(source: string): string {
  return source.replace(PLACEHOLDER, (_, name: string, fallback: string | undefined) => {
    const variable = VARIABLES[name];
    return fallback === undefined
      ? `{{${variable}}}`
      : `{{#if ${variable}}}{{${variable}}}{{else}}${fallback.trim()}{{/if}}`;
  });
}
