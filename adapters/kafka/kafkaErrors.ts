/**
 * kafkajs errors → FleetErrors, through tables only (CONVENTIONS: retries read `retriable`, never
 * message text). kafkajs marks its errors with a class name (`name`) and, for broker error responses,
 * the Kafka protocol error `type` (KIP error names, e.g. NOT_LEADER_FOR_PARTITION).
 */
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';

interface Mapping {
  code: ErrorCode;
  retriable?: boolean;
}

const UNAVAILABLE: Mapping = { code: 'UNAVAILABLE', retriable: true };

/** Kafka protocol error types (org.apache.kafka.common.protocol.Errors). */
const BY_PROTOCOL_TYPE: Record<string, Mapping> = {
  // leadership moves, replicas catching up, coordinators loading: the next attempt usually works
  LEADER_NOT_AVAILABLE: UNAVAILABLE,
  NOT_LEADER_FOR_PARTITION: UNAVAILABLE,
  NOT_LEADER_OR_FOLLOWER: UNAVAILABLE,
  REPLICA_NOT_AVAILABLE: UNAVAILABLE,
  BROKER_NOT_AVAILABLE: UNAVAILABLE,
  NETWORK_EXCEPTION: UNAVAILABLE,
  NOT_ENOUGH_REPLICAS: UNAVAILABLE,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: UNAVAILABLE,
  KAFKA_STORAGE_ERROR: UNAVAILABLE,
  NOT_CONTROLLER: UNAVAILABLE,
  GROUP_LOAD_IN_PROGRESS: UNAVAILABLE,
  GROUP_COORDINATOR_NOT_AVAILABLE: UNAVAILABLE,
  NOT_COORDINATOR_FOR_GROUP: UNAVAILABLE,
  FENCED_LEADER_EPOCH: UNAVAILABLE,
  UNKNOWN_LEADER_EPOCH: UNAVAILABLE,
  LISTENER_NOT_FOUND: UNAVAILABLE,
  OFFSET_NOT_AVAILABLE: UNAVAILABLE,
  UNSTABLE_OFFSET_COMMIT: UNAVAILABLE,
  FETCH_SESSION_ID_NOT_FOUND: UNAVAILABLE,
  INVALID_FETCH_SESSION_EPOCH: UNAVAILABLE,
  PREFERRED_LEADER_NOT_AVAILABLE: UNAVAILABLE,
  ELIGIBLE_LEADERS_NOT_AVAILABLE: UNAVAILABLE,
  // group membership changed under a commit: retrying after the rejoin is safe (a commit only ever
  // carries offsets whose records are processed)
  REBALANCE_IN_PROGRESS: UNAVAILABLE,
  ILLEGAL_GENERATION: UNAVAILABLE,
  UNKNOWN_MEMBER_ID: UNAVAILABLE,
  // The idempotent producer's sequence state is gone (e.g. a broker restart lost it): the request
  // was refused, and createKafkaLog renews the producer, so sending again succeeds.
  OUT_OF_ORDER_SEQUENCE_NUMBER: UNAVAILABLE,
  UNKNOWN_PRODUCER_ID: UNAVAILABLE,
  INVALID_PRODUCER_EPOCH: UNAVAILABLE,
  INVALID_PRODUCER_ID_MAPPING: UNAVAILABLE,
  REQUEST_TIMED_OUT: { code: 'TIMEOUT', retriable: true },
  THROTTLING_QUOTA_EXCEEDED: { code: 'RATE_LIMITED', retriable: true },
  UNKNOWN_TOPIC_OR_PARTITION: { code: 'NOT_FOUND', retriable: false },
  GROUP_ID_NOT_FOUND: { code: 'NOT_FOUND', retriable: false },
  TOPIC_ALREADY_EXISTS: { code: 'CONFLICT', retriable: false },
  NON_EMPTY_GROUP: { code: 'CONFLICT', retriable: false },
  MESSAGE_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', retriable: false },
  RECORD_LIST_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', retriable: false },
  OFFSET_METADATA_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', retriable: false },
  INVALID_TOPIC_EXCEPTION: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_PARTITIONS: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_REPLICATION_FACTOR: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_REPLICA_ASSIGNMENT: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_CONFIG: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_TIMESTAMP: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_RECORD: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_GROUP_ID: { code: 'VALIDATION_FAILED', retriable: false },
  INVALID_COMMIT_OFFSET_SIZE: { code: 'VALIDATION_FAILED', retriable: false },
  POLICY_VIOLATION: { code: 'VALIDATION_FAILED', retriable: false },
  CORRUPT_MESSAGE: { code: 'CORRUPT_LOG', retriable: false },
  TOPIC_AUTHORIZATION_FAILED: { code: 'FORBIDDEN', retriable: false },
  GROUP_AUTHORIZATION_FAILED: { code: 'FORBIDDEN', retriable: false },
  CLUSTER_AUTHORIZATION_FAILED: { code: 'FORBIDDEN', retriable: false },
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: { code: 'FORBIDDEN', retriable: false },
  SASL_AUTHENTICATION_FAILED: { code: 'UNAUTHORIZED', retriable: false },
  UNSUPPORTED_SASL_MECHANISM: { code: 'UNAUTHORIZED', retriable: false },
  ILLEGAL_SASL_STATE: { code: 'UNAUTHORIZED', retriable: false },
};

/** kafkajs error classes (their `name`), for errors that are not broker error responses. */
const BY_NAME: Record<string, Mapping> = {
  KafkaJSConnectionError: UNAVAILABLE,
  KafkaJSConnectionClosedError: UNAVAILABLE,
  KafkaJSBrokerNotFound: UNAVAILABLE,
  KafkaJSNoBrokerAvailableError: UNAVAILABLE,
  KafkaJSMetadataNotLoaded: UNAVAILABLE,
  KafkaJSTopicMetadataNotLoaded: UNAVAILABLE,
  KafkaJSStaleTopicMetadataAssignment: UNAVAILABLE,
  KafkaJSGroupCoordinatorNotFound: UNAVAILABLE,
  KafkaJSRequestTimeoutError: { code: 'TIMEOUT', retriable: true },
  KafkaJSTimeout: { code: 'TIMEOUT', retriable: true },
  KafkaJSLockTimeout: { code: 'TIMEOUT', retriable: true },
  KafkaJSSASLAuthenticationError: { code: 'UNAUTHORIZED', retriable: false },
  KafkaJSPartialMessageError: { code: 'CORRUPT_LOG', retriable: false },
  KafkaJSUnsupportedMagicByteInMessageSet: { code: 'CORRUPT_LOG', retriable: false },
  KafkaJSServerDoesNotSupportApiKey: { code: 'INTERNAL', retriable: false },
  KafkaJSNotImplemented: { code: 'INTERNAL', retriable: false },
  KafkaJSInvariantViolation: { code: 'INTERNAL', retriable: false },
};

interface KafkaJSErrorShape {
  name?: unknown;
  type?: unknown;
  retriable?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/**
 * The first answer `pick` gives for `error` or an error it wraps: its own fields first, then the
 * errors of a KafkaJSAggregateError (e.g. createTopics) in order, then its cause.
 */
function findIn<T>(error: unknown, pick: (e: KafkaJSErrorShape) => T | undefined, depth = 0): T | undefined {
  if (depth > 8 || typeof error !== 'object' || error === null) return undefined;
  const e = error as KafkaJSErrorShape;
  const own = pick(e);
  if (own !== undefined) return own;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const found = findIn(inner, pick, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return e.cause !== undefined && e.cause !== error ? findIn(e.cause, pick, depth + 1) : undefined;
}

function mappingOf(e: KafkaJSErrorShape): Mapping | undefined {
  if (typeof e.type === 'string' && e.type in BY_PROTOCOL_TYPE) return BY_PROTOCOL_TYPE[e.type];
  if (typeof e.name === 'string' && e.name in BY_NAME) return BY_NAME[e.name];
  return undefined;
}

/** Broker answers after which an idempotent producer can send nothing more under its producer id. */
const PRODUCER_STATE_LOST = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING']);

/** Whether `error` (or an error it wraps) says the producer's sequence state is lost for good. */
export function lostProducerState(error: unknown): boolean {
  return findIn(error, (e) => (typeof e.type === 'string' && PRODUCER_STATE_LOST.has(e.type) ? true : undefined)) === true;
}

/** Maps anything kafkajs throws to a FleetError; FleetErrors pass through unchanged. */
export function kafkaErrorToFleetError(error: unknown, context?: string): FleetError {
  if (error instanceof FleetError) return error;
  const mapping = findIn(error, mappingOf);
  const message = error instanceof Error ? error.message : String(error);
  const text = context ? `${context}: ${message}` : message;
  if (mapping) return new FleetError(mapping.code, text, { cause: error, retriable: mapping.retriable });
  // Not in the tables: keep kafkajs's own retriability (a per-class or per-protocol-code flag) of
  // the innermost cause, since wrappers such as KafkaJSNumberOfRetriesExceeded are final by design.
  const retriable = innermost(error).retriable === true;
  return new FleetError(retriable ? 'UNAVAILABLE' : 'INTERNAL', text, { cause: error, retriable });
}

function innermost(error: unknown): KafkaJSErrorShape {
  let current: unknown = error;
  for (let depth = 0; depth < 8; depth++) {
    const next = typeof current === 'object' && current !== null ? (current as KafkaJSErrorShape).cause : undefined;
    if (typeof next !== 'object' || next === null || next === current) break;
    current = next;
  }
  return typeof current === 'object' && current !== null ? (current as KafkaJSErrorShape) : {};
}
