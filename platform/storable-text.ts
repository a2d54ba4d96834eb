// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this removes
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * Text a remote peer chose (an SMTP reply, a webhook response body), made fit to store: PostgreSQL refuses NUL in
 * text and jsonb, other C0 controls (tab and line breaks aside) only garble logs and screens, and the peer, not
 * us, would otherwise decide how long it is. A cut that splits a surrogate pair leaves U+FFFD (jsonb refuses a
 * lone surrogate too).
 */
export function storableText(text: string, maxChars: number): string {
  return text.replace(CONTROLS, '').slice(0, maxChars).toWellFormed();
}
