import { z } from 'zod';

/** How large a contact's fields may be, through the API and a CSV import alike. */
export const CONTACT_LIMITS = {
  nameChars: 256,
  properties: 50,
  propertyKeyChars: 64,
  propertyValueChars: 1000,
};

const email = z
  .string()
  .trim()
  .max(254, 'must be at most 254 characters')
  .pipe(z.email('must be a valid email address'));
/**
 * Control characters (C0 with CR, LF and tab, DEL, C1): a name goes into subjects and headers, where a line break
 * makes the message unrenderable and the contact would silently get nothing.
 */
const CONTROL_CHARACTER = /\p{Cc}/u;
const personName = z
  .string()
  .trim()
  .max(CONTACT_LIMITS.nameChars, `must be at most ${CONTACT_LIMITS.nameChars} characters`)
  .refine((name) => !CONTROL_CHARACTER.test(name), {
    message: 'must not contain control characters (line breaks, tabs and the like)',
  })
  .nullable();
/** The rules a contact's fields follow, through the API and a CSV import alike. */
export const CONTACT_FIELD_RULES = {
  email,
  personName,
  propertyName: new RegExp(`^[A-Za-z0-9_]{1,${CONTACT_LIMITS.propertyKeyChars}}$`),
};
