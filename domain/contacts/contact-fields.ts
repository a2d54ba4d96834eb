import { z } from 'zod';
import { CONTROL_CHARACTERS_REFUSED, hasNoControlCharacter } from '../../platform/http/route-schema.ts';

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
 * A contact's name goes into subjects and headers, where a line break makes the message unrenderable and the
 * contact would silently get nothing: no control characters, as in every name (route-schema.ts). May be empty.
 */
const personName = z
  .string()
  .trim()
  .max(CONTACT_LIMITS.nameChars, `must be at most ${CONTACT_LIMITS.nameChars} characters`)
  .refine(hasNoControlCharacter, CONTROL_CHARACTERS_REFUSED)
  .nullable();
/** The rules a contact's fields follow, through the API and a CSV import alike. */
export const CONTACT_FIELD_RULES = {
  email,
  personName,
  propertyName: new RegExp(`^[A-Za-z0-9_]{1,${CONTACT_LIMITS.propertyKeyChars}}$`),
};
