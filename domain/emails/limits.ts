/** Limits of an email, sent through the API or the SMTP relay (docs/emails.md lists them). */
export const EMAIL_LIMITS = {
  recipients: 50,
  attachmentBytes: 40 * 1024 * 1024,
  attachments: 100,
  tags: 20,
  tagChars: 64,
  headers: 50,
  headerValueChars: 998,
  subjectChars: 998,
  bodyBytes: 10 * 1024 * 1024,
  sendAtHorizonDays: 30,
  batch: 100,
} as const;
