/**
 * An email's unsubscribe link as its recipient follows it: the link of its List-Unsubscribe header, on the port
 * this test's service listens on (PUBLIC_URL names port 0: the service takes a free one).
 */
export const unsubscribeLink = (headers: Record<string, string>, baseUrl: string) =>
  /<([^>]+)>/.exec(headers['List-Unsubscribe'])![1].replace(/^http:\/\/[^/]+/, baseUrl);

/** A form posted to an unsubscribe link, urlencoded, as a browser sends the page's forms. */
export const postForm = (url: string, body: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

/** RFC 8058's one-click POST: what a mailbox provider's unsubscribe button sends. */
export const oneClick = (url: string) => postForm(url, 'List-Unsubscribe=One-Click');
