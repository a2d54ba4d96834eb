// Sends one email with the SDK and prints what Postline answered.
//
//   POSTLINE_API_KEY=pk_test_… POSTLINE_URL=http://localhost:3000 node examples/send.ts
//
// In your project: `import { createPostline } from '@postline/sdk'`.
import { createPostline, PostlineError } from '../sdk/src/index.ts';

const postline = createPostline({
  apiKey: process.env.POSTLINE_API_KEY ?? '',
  baseUrl: process.env.POSTLINE_URL ?? 'http://localhost:3000',
});

try {
  const accepted = await postline.emails.send({
    from: process.env.EMAIL_FROM ?? 'Acme <hello@acme.example>',
    to: [process.env.EMAIL_TO ?? 'delivered@simulator.postline.dev'],
    subject: 'Hello from Postline',
    html: '<p>It works.</p>',
    text: 'It works.',
  });
  console.log(JSON.stringify(accepted));
} catch (error) {
  if (!(error instanceof PostlineError)) throw error;
  console.error(`${error.status} ${error.code}: ${error.message}`);
  process.exitCode = 1;
}
