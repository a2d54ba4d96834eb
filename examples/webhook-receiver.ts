// An Express endpoint for Postline's webhooks: it checks each delivery's signature with the SDK and prints the
// event as one JSON line.
//
//   WEBHOOK_SECRET=whsec_… PORT=4000 node examples/webhook-receiver.ts
//
// Postline delivers to public addresses only: for this receiver on 127.0.0.1, start Postline with
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (else creating the webhook answers 422).
//
// In your project: `import { verifyWebhook } from '@postline/sdk'`.
import express from 'express';
import { verifyWebhook, WebhookVerificationError } from '../sdk/src/index.ts';

const secret = process.env.WEBHOOK_SECRET ?? '';
const app = express();

// The signature covers the body as sent: read it as text, never re-serialise parsed JSON.
app.post('/webhooks', express.text({ type: 'application/json' }), (req, res) => {
  try {
    const event = verifyWebhook(req.body, req.headers as Record<string, string>, secret);
    console.log(JSON.stringify({ type: event.type, id: event.id, data: event.data }));
    res.status(204).end();
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    console.error(`refused a delivery: ${error.message}`);
    res.status(400).end();
  }
});

const server = app.listen(Number(process.env.PORT ?? 4000), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening on ${typeof address === 'object' && address ? address.port : ''}`);
});
process.on('SIGTERM', () => server.close());
