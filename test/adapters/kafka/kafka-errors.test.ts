/**
 * The kafkajs → FleetError table, on kafkajs's own error classes and protocol error codes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { kafkaErrorToFleetError, lostProducerState } from '../../../adapters/kafka/kafkaErrors.ts';

const {
  KafkaJSConnectionError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSNonRetriableError,
  KafkaJSProtocolError,
  KafkaJSRequestTimeoutError,
  KafkaJSAggregateError,
  KafkaJSSASLAuthenticationError,
  KafkaJSError,
} = kafkajs;

// kafkajs's .d.ts lists fewer constructor arguments than its classes take (message, {cause}).
type ErrorClass = new (e: unknown, options?: { cause?: unknown }) => Error;
const NonRetriableError = KafkaJSNonRetriableError as unknown as ErrorClass;
const SASLAuthenticationError = KafkaJSSASLAuthenticationError as unknown as ErrorClass;

/** A broker error response as kafkajs builds it (type, code and retriable from its protocol table). */
function protocolError(type: string, code: number, retriable: boolean): InstanceType<typeof KafkaJSProtocolError> {
  return new KafkaJSProtocolError(Object.assign(new Error(`broker said ${type}`), { type, code, retriable }) as never);
}

function expectMapping(error: unknown, code: string, retriable: boolean): FleetError {
  const mapped = kafkaErrorToFleetError(error, 'ctx');
  assert.instance(mapped, FleetError);
  assert.is(mapped.code, code);
  assert.is(mapped.retriable, retriable);
  assert.is(mapped.cause, error);
  assert.ok(mapped.message.startsWith('ctx: '));
  return mapped;
}

test('connection failures and request timeouts are retriable', () => {
  expectMapping(new KafkaJSConnectionError('Connection error: ECONNREFUSED', { broker: '127.0.0.1:9' }), 'UNAVAILABLE', true);
  expectMapping(new KafkaJSRequestTimeoutError('Request Produce timed out'), 'TIMEOUT', true);
});

test('retries exhausted on a connection error stay retriable (the cause decides, not the wrapper)', () => {
  const cause = new KafkaJSConnectionError('Connection error: ECONNREFUSED');
  const wrapped = new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 5, retryTime: 2000 });
  assert.is(wrapped.retriable, false, 'kafkajs marks the wrapper final');
  expectMapping(wrapped, 'UNAVAILABLE', true);
});

test('leadership and coordinator changes are retriable UNAVAILABLE', () => {
  for (const [type, code] of [['NOT_LEADER_FOR_PARTITION', 6], ['LEADER_NOT_AVAILABLE', 5], ['NOT_ENOUGH_REPLICAS', 19], ['NOT_COORDINATOR_FOR_GROUP', 16], ['REBALANCE_IN_PROGRESS', 27]] as const) {
    expectMapping(protocolError(type, code, true), 'UNAVAILABLE', true);
  }
  expectMapping(protocolError('REQUEST_TIMED_OUT', 7, true), 'TIMEOUT', true);
});

test('a lost producer sequence is retriable UNAVAILABLE and recognised through wrappers', () => {
  for (const [type, code] of [['OUT_OF_ORDER_SEQUENCE_NUMBER', 45], ['UNKNOWN_PRODUCER_ID', 59], ['INVALID_PRODUCER_EPOCH', 47]] as const) {
    const error = protocolError(type, code, false);
    expectMapping(error, 'UNAVAILABLE', true);
    assert.ok(lostProducerState(error), type);
    assert.ok(lostProducerState(new KafkaJSNumberOfRetriesExceeded(error as never, { retryCount: 0, retryTime: 100 })), `${type} wrapped`);
  }
  assert.not.ok(lostProducerState(protocolError('NOT_LEADER_FOR_PARTITION', 6, true)));
  assert.not.ok(lostProducerState(new KafkaJSConnectionError('Connection error: ECONNREFUSED')));
});

test('request errors map to their FleetError codes, not retriable', () => {
  expectMapping(protocolError('MESSAGE_TOO_LARGE', 10, false), 'PAYLOAD_TOO_LARGE', false);
  expectMapping(protocolError('RECORD_LIST_TOO_LARGE', 18, false), 'PAYLOAD_TOO_LARGE', false);
  expectMapping(protocolError('INVALID_TOPIC_EXCEPTION', 17, false), 'VALIDATION_FAILED', false);
  expectMapping(protocolError('TOPIC_AUTHORIZATION_FAILED', 29, false), 'FORBIDDEN', false);
  expectMapping(protocolError('TOPIC_ALREADY_EXISTS', 36, false), 'CONFLICT', false);
  expectMapping(protocolError('UNKNOWN_TOPIC_OR_PARTITION', 3, true), 'NOT_FOUND', false);
  expectMapping(new SASLAuthenticationError('SASL PLAIN authentication failed'), 'UNAUTHORIZED', false);
});

test('a final wrapper around a broker error maps by the broker error', () => {
  const wrapped = new NonRetriableError(protocolError('MESSAGE_TOO_LARGE', 10, false), { cause: protocolError('MESSAGE_TOO_LARGE', 10, false) });
  expectMapping(wrapped, 'PAYLOAD_TOO_LARGE', false);
});

test('aggregate errors map by their first known member', () => {
  const aggregate = new KafkaJSAggregateError('Topic creation errors', [protocolError('INVALID_PARTITIONS', 37, false)]);
  expectMapping(aggregate, 'VALIDATION_FAILED', false);
});

test('unknown kafkajs errors keep kafkajs retriability; anything else is INTERNAL', () => {
  expectMapping(protocolError('SOME_FUTURE_ERROR', 999, true), 'UNAVAILABLE', true);
  expectMapping(protocolError('UNKNOWN', -1, false), 'INTERNAL', false);
  expectMapping(new KafkaJSError('transient', { retriable: true }), 'UNAVAILABLE', true);
  expectMapping(new TypeError('bug'), 'INTERNAL', false);
  expectMapping('a string', 'INTERNAL', false);
});

test('the message text never decides: same text, different class, different code', () => {
  const text = 'Connection error: ECONNREFUSED';
  assert.is(kafkaErrorToFleetError(new Error(text)).code, 'INTERNAL');
  assert.is(kafkaErrorToFleetError(new KafkaJSConnectionError(text)).code, 'UNAVAILABLE');
});

test('FleetErrors pass through unchanged', () => {
  const error = new FleetError('BACKPRESSURE', 'full');
  assert.is(kafkaErrorToFleetError(error), error);
});

test.run();
