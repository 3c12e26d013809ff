/**
 * Webhook port: one signed delivery attempt to an integration's receiver. Implemented by
 * adapters/webhooks/WebhookSender.ts (Standard Webhooks signing, the operator's destination policy
 * at every connection, no redirects, bounded answers). Deliveries (engine/integrations) and the
 * `test` route send through it.
 */
/** What an answer means for the delivery (engine/integrations/deliveryOutcome.ts classifies answers). */
export type DeliveryOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'disable'; reason: 'gone'; status: number }
  | { kind: 'retry'; reason: 'status' | 'timeout' | 'connection' | 'refused'; status?: number; retryAfterMs?: number };

export interface WebhookRequest {
  url: string;
  /** webhook-id: the same on every attempt of these events. */
  messageId: string;
  events: readonly unknown[];
  /** Signing secrets, current first (engine/integrations/webhookSignature.ts). */
  secrets: readonly string[];
  /** The integration's own headers (engine/integrations/customHeaders.ts, checked again by the sender). */
  headers?: Record<string, string>;
}

export interface WebhookAnswer {
  outcome: DeliveryOutcome;
  /** HTTP status, when an answer came. */
  status?: number;
  /** The start of the answer's body as text (at most the sender's preview size), '' without one. */
  body: string;
  /** Why no answer came, for people: a short code and message. */
  error?: string;
}

export interface WebhookTransport {
  /** One attempt. Never throws for what the receiver or the network does; a malformed request (URL, headers, secrets) throws its FleetError. */
  send(request: WebhookRequest): Promise<WebhookAnswer>;
}
