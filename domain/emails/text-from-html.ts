import { convert } from 'html-to-text';

const OPTIONS = {
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    // What the reader never sees: a broadcast's preview text, a sender's hidden preheader.
    { selector: '[style*="display:none"]', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
  ],
};

/**
 * The text/plain part of an email given as html alone, as Resend makes one: its words, wrapped at 78 characters,
 * links as `text [url]`, images and hidden elements left out. Made when the message is composed, from the
 * accepted html, so the same html always makes the same text (html-to-text is pinned).
 */
export const textFromHtml = (html: string): string => convert(html, OPTIONS);
