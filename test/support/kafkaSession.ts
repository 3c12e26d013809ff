/**
 * The consumer-group session timeout the Kafka tests use: KAFKA_SESSION_TIMEOUT_MS, else 10 s. A
 * CPU-starved CI runner can stall heartbeats for seconds; a longer session keeps members in their
 * group there (.ci/run sets 20 s), at the price of slower recovery in the tests that kill a member.
 * The broker accepts 6 s to 120 s (scripts/kafka.sh group.min/max.session.timeout.ms).
 */
const raw = process.env.KAFKA_SESSION_TIMEOUT_MS;
const parsed = raw === undefined || raw === '' ? 10_000 : Number(raw);
if (!Number.isSafeInteger(parsed) || parsed < 6_000 || parsed > 120_000) {
  throw new Error(`KAFKA_SESSION_TIMEOUT_MS must be an integer from 6000 to 120000 (the broker's bounds), got '${raw}'`);
}

export const TEST_SESSION_TIMEOUT_MS = parsed;
