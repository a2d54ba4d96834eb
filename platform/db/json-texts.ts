/**
 * Many JSON texts as one text parameter: joined by U+001E, which JSON text always escapes (a control character),
 * so that it never occurs inside one. PostgreSQL splits them (`jsonTextsSql`) far faster than it reads them as
 * strings out of a JSON parameter, and Node writes them without escaping them a second time.
 */
export const joinJsonTexts = (texts: string[]): string => texts.join('\u001e');

/** The texts of parameter `$n` (joined by `joinJsonTexts`), one row each, in order: for `ROWS FROM`. */
export const jsonTextsSql = (n: number): string => `unnest(string_to_array($${n}, chr(30)))`;
