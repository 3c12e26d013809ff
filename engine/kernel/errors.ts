/**
 * One error hierarchy with stable codes. Retry decisions read `retriable`, never message text;
 * the HTTP edge maps `code` to a status and an application/problem+json body.
 */
export const ErrorCodes = {
  // uplink decoding and validation (dead letters)
  MALFORMED_JSON: { status: 400, retriable: false },
  MALFORMED_CBOR: { status: 400, retriable: false },
  MALFORMED_PAYLOAD: { status: 400, retriable: false },
  UNSUPPORTED_CONTENT_TYPE: { status: 415, retriable: false },
  INVALID_STATE: { status: 422, retriable: false },
  INVALID_AT: { status: 422, retriable: false },
  /** A string of a state holds a lone surrogate (no character, not encodable as UTF-8). */
  INVALID_TEXT: { status: 422, retriable: false },
  UNKNOWN_DEVICE: { status: 404, retriable: false },
  UNKNOWN_ASSET: { status: 404, retriable: false },
  PROFILE_VIOLATION: { status: 422, retriable: false },
  /** A batch item repeats a reading of an earlier item: the same asset at the same explicit `at`. */
  DUPLICATE_READING: { status: 422, retriable: false },
  TOO_DEEP: { status: 422, retriable: false },
  DECODE_FAILED: { status: 422, retriable: false },
  PROCESSING_FAILED: { status: 500, retriable: false },
  // commands
  NOT_ACTUATOR: { status: 422, retriable: false },
  COMMAND_EXPIRED: { status: 410, retriable: false },
  NO_DOWNLINK: { status: 501, retriable: false },
  /** The network server refused a downlink for good (4xx other than 408/429): retrying cannot help. */
  DOWNLINK_REFUSED: { status: 502, retriable: false },
  /** The device already has as many commands waiting as `--command-queue` allows; room comes as they are delivered or expire. */
  COMMAND_QUEUE_FULL: { status: 429, retriable: true },
  // request level
  BAD_REQUEST: { status: 400, retriable: false },
  UNAUTHORIZED: { status: 401, retriable: false },
  FORBIDDEN: { status: 403, retriable: false },
  NOT_FOUND: { status: 404, retriable: false },
  /** No representation the request accepts (`Accept`, `?format=`): the problem lists `allowed`. */
  NOT_ACCEPTABLE: { status: 406, retriable: false },
  CONFLICT: { status: 409, retriable: false },
  PAYLOAD_TOO_LARGE: { status: 413, retriable: false },
  /** The request head is larger than the server reads (Node's --max-http-header-size, 16 KiB). */
  HEADERS_TOO_LARGE: { status: 431, retriable: false },
  /** The client did not send its whole request in time. */
  REQUEST_TIMEOUT: { status: 408, retriable: true },
  VALIDATION_FAILED: { status: 422, retriable: false },
  RATE_LIMITED: { status: 429, retriable: true },
  /**
   * A ground's quota (docs/grounds.md "Quotas"): 403 for one more device than it may hold; an
   * uplink over its states per second is answered 429 with Retry-After (the error's `status`).
   */
  QUOTA_EXCEEDED: { status: 403, retriable: false },
  /** An integration's URL points where outbound requests may not go (adapters/webhooks/OutboundPolicy.ts). */
  DESTINATION_REFUSED: { status: 422, retriable: false },
  // infrastructure
  BACKPRESSURE: { status: 503, retriable: true },
  UNAVAILABLE: { status: 503, retriable: true },
  TIMEOUT: { status: 503, retriable: true },
  CORRUPT_LOG: { status: 500, retriable: false },
  CLOSED: { status: 503, retriable: false },
  /** This HTTP edge was built without the state export port (engine/ports/stateExport.ts). */
  EXPORT_UNAVAILABLE: { status: 503, retriable: false },
  /** A listener's port is held by another socket: the process does not start (app/portInUse.ts). */
  PORT_IN_USE: { status: 503, retriable: false },
  INTERNAL: { status: 500, retriable: false },
} as const satisfies Record<string, { status: number; retriable: boolean }>;

export type ErrorCode = keyof typeof ErrorCodes;

export interface FleetErrorOptions {
  cause?: unknown;
  /** Overrides the code's default retriability (e.g. a vendor error known to be transient). */
  retriable?: boolean;
  /** Overrides the code's status where one code has two (QUOTA_EXCEEDED: 403 a count, 429 a rate). */
  status?: number;
  /** Structured detail for problem+json (e.g. the offending field path). */
  detail?: Record<string, unknown>;
}

export class FleetError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly status: number;
  readonly detail: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: FleetErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FleetError';
    this.code = code;
    this.status = options.status ?? ErrorCodes[code].status;
    this.retriable = options.retriable ?? ErrorCodes[code].retriable;
    this.detail = options.detail;
  }
}

export function isFleetError(error: unknown): error is FleetError {
  return error instanceof FleetError;
}

/** Wraps anything thrown into a FleetError, keeping FleetErrors as they are. */
export function toFleetError(error: unknown, fallback: ErrorCode = 'INTERNAL'): FleetError {
  if (error instanceof FleetError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new FleetError(fallback, message, { cause: error });
}
