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
const personName = z
  .string()
  .trim()
  .max(CONTACT_LIMITS.nameChars, `must be at most ${CONTACT_LIMITS.nameChars} characters`)
  .nullable();
/** The rules a contact's fields follow, through the API and a CSV import alike. */
export const CONTACT_FIELD_RULES = {
  email,
  personName,
  propertyName: new RegExp(`^[A-Za-z0-9_]{1,${CONTACT_LIMITS.propertyKeyChars}}$`),
};
