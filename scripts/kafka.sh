#!/usr/bin/env bash
# A real single-node Apache Kafka (KRaft, combined broker + controller) for integration tests.
#
#   scripts/kafka.sh fetch     download Kafka and its runtime jars from Maven Central (once)
#   scripts/kafka.sh start     format storage (first time only) and start the broker in the background
#   scripts/kafka.sh stop      stop the broker started by `start` and wait for it to exit
#   scripts/kafka.sh restart   stop + start, keeping the data (fault tests)
#   scripts/kafka.sh status    exit 0 and print "running <pid> <address>" when up, exit 3 otherwise
#   scripts/kafka.sh brokers   print the client address (127.0.0.1:19092)
#
# Every subcommand is idempotent. Environment overrides (defaults in brackets):
#   KAFKA_VERSION [3.9.1]  KAFKA_SCALA [2.13]  SLF4J_VERSION [1.7.36, the API version Kafka 3.9 uses]
#   KAFKA_CACHE_DIR [<repo>/.cache/kafka]  KAFKA_LIBS_DIR [$KAFKA_CACHE_DIR/libs]
#   KAFKA_DATA_DIR [$KAFKA_CACHE_DIR/data]  KAFKA_PORT [19092]  KAFKA_CONTROLLER_PORT [19093]
#   KAFKA_HEAP [-Xmx512m -Xms256m]  KAFKA_START_TIMEOUT [120, seconds]
# The broker listens on 127.0.0.1 only. There is no fallback: if Maven Central cannot be reached,
# `fetch` fails and says so.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.1}"
KAFKA_SCALA="${KAFKA_SCALA:-2.13}"
SLF4J_VERSION="${SLF4J_VERSION:-1.7.36}"
CACHE_DIR="${KAFKA_CACHE_DIR:-$ROOT/.cache/kafka}"
LIBS_DIR="${KAFKA_LIBS_DIR:-$CACHE_DIR/libs}"
DATA_DIR="${KAFKA_DATA_DIR:-$CACHE_DIR/data}"
PORT="${KAFKA_PORT:-19092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
HEAP="${KAFKA_HEAP:--Xmx512m -Xms256m}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
HOST=127.0.0.1

PID_FILE="$DATA_DIR/kafka.pid"
LOG_FILE="$DATA_DIR/kafka.log"
CONFIG_FILE="$DATA_DIR/server.properties"
LOG4J_FILE="$DATA_DIR/log4j.properties"
LOG_DIRS="$DATA_DIR/kraft-logs"
FETCHED_MARK="$LIBS_DIR/.fetched-kafka_${KAFKA_SCALA}-${KAFKA_VERSION}"

say() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

cmd_brokers() { echo "$HOST:$PORT"; }

# ---------------------------------------------------------------------------------------------- fetch
cmd_fetch() {
  if [[ -f "$FETCHED_MARK" ]]; then
    say "Kafka $KAFKA_VERSION already fetched in $LIBS_DIR"
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
  command -v java >/dev/null || die "java not found: install a JDK 17+ (apt-get install openjdk-17-jre-headless)"
  local build="$CACHE_DIR/fetch"
  mkdir -p "$build" "$LIBS_DIR"
  # kafka-tools brings org.apache.kafka.tools.TopicCommand and friends (handy for manual checks).
  cat >"$build/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fleetstream.local</groupId>
  <artifactId>kafka-test-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${KAFKA_SCALA}</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>${SLF4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
  say "fetching kafka_${KAFKA_SCALA}:${KAFKA_VERSION} and runtime dependencies from Maven Central into $LIBS_DIR"
  local started=$SECONDS
  if ! mvn -B -q -f "$build/pom.xml" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$LIBS_DIR" -DoverWriteReleases=false \
      >"$build/mvn.log" 2>&1; then
    tail -n 30 "$build/mvn.log" >&2 || true
    if grep -qiE 'Could not transfer|UnknownHost|Connect(ion)? (timed out|refused)|Network is unreachable|resolve' "$build/mvn.log"; then
      die "Maven Central is unreachable (see $build/mvn.log); cannot fetch Apache Kafka, no broker available"
    fi
    die "Maven failed to fetch Kafka $KAFKA_VERSION (see $build/mvn.log)"
  fi
  ls "$LIBS_DIR"/kafka_"${KAFKA_SCALA}"-"${KAFKA_VERSION}".jar >/dev/null 2>&1 \
    || die "Maven finished but kafka_${KAFKA_SCALA}-${KAFKA_VERSION}.jar is missing in $LIBS_DIR"
  touch "$FETCHED_MARK"
  say "fetched $(ls "$LIBS_DIR"/*.jar | wc -l) jars in $((SECONDS - started))s"
}

# ---------------------------------------------------------------------------------------------- start
running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must be our broker's JVM.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $CONFIG_FILE" || return 1
  echo "$pid"
}

write_config() {
  mkdir -p "$DATA_DIR" "$LOG_DIRS"
  cat >"$CONFIG_FILE" <<EOF
# Generated by scripts/kafka.sh: single node, KRaft, broker and controller in one process.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$LOG_DIRS
num.partitions=4
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# A CPU-starved CI runner stalls the JVM and the test clients for seconds at a time. The controller
# fences its own broker after broker.session.timeout.ms without a heartbeat (default 9 s): partitions
# go offline and every client fails. 30 s rides out such stalls on one node. Groups accept sessions
# from 6 s (tests that kill a member want a quick eviction) to 120 s (KAFKA_SESSION_TIMEOUT_MS on a
# slow runner, test/support/kafkaSession.ts); a rebalance waits at most that long for members.
broker.session.timeout.ms=30000
broker.heartbeat.interval.ms=2000
group.min.session.timeout.ms=6000
group.max.session.timeout.ms=120000
# Offset commits wait for the offsets topic's append: give a stalled log flush time before failing.
offsets.commit.timeout.ms=15000
auto.create.topics.enable=false
delete.topic.enable=true
num.network.threads=2
num.io.threads=4
log.retention.hours=24
log.segment.bytes=67108864
EOF
  cat >"$LOG4J_FILE" <<EOF
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
EOF
}

java_cp() { echo "$LIBS_DIR/*"; }

format_storage() {
  if [[ -f "$LOG_DIRS/meta.properties" ]]; then return 0; fi
  local cluster_id
  cluster_id="$(java -cp "$(java_cp)" -Dlog4j.configuration="file:$LOG4J_FILE" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  [[ -n "$cluster_id" ]] || die "StorageTool random-uuid produced no cluster id"
  say "formatting $LOG_DIRS (cluster id $cluster_id)"
  java -cp "$(java_cp)" -Dlog4j.configuration="file:$LOG4J_FILE" \
    kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG_FILE" >>"$LOG_FILE" 2>&1 \
    || { tail -n 20 "$LOG_FILE" >&2; die "StorageTool format failed (log: $LOG_FILE)"; }
}

# The broker answers when a client can list topics through it. kafkajs (already a project dependency)
# makes this a sub-second check; without node, fall back to the listening socket.
broker_answers() {
  local node="$ROOT/node_modules/.bin/node"
  if [[ -x "$node" && -d "$ROOT/node_modules/kafkajs" ]]; then
    (cd "$ROOT" && timeout 20 "$node" --input-type=module -e "
      import { Kafka, logLevel } from 'kafkajs';
      const admin = new Kafka({ brokers: ['$HOST:$PORT'], clientId: 'kafka-sh-probe', logLevel: logLevel.NOTHING,
        retry: { retries: 0 }, connectionTimeout: 2000, requestTimeout: 5000 }).admin();
      try { await admin.connect(); await admin.listTopics(); process.exit(0); } catch { process.exit(1); }
    " >/dev/null 2>&1)
  else
    (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
  fi
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    say "already running (pid $pid)"
    cmd_brokers
    return 0
  fi
  ls "$LIBS_DIR"/kafka_"${KAFKA_SCALA}"-*.jar >/dev/null 2>&1 || die "Kafka is not fetched: run scripts/kafka.sh fetch"
  if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    die "port $PORT on $HOST is already in use by another process"
  fi
  local started=$SECONDS
  write_config
  format_storage
  # setsid: the broker outlives the shell that started it; the inner shell records its own pid and
  # execs the JVM, so the pid file names the JVM itself.
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
    java $HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$LOG4J_FILE" -Dkafka.logs.dir="$DATA_DIR" \
    -cp "$(java_cp)" kafka.Kafka "$CONFIG_FILE" </dev/null >>"$LOG_FILE" 2>&1 &
  local deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    sleep 1
    if ! pid="$(running_pid)"; then
      if [[ -f "$PID_FILE" ]] && ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        tail -n 30 "$LOG_FILE" >&2 || true
        die "broker exited during startup (log: $LOG_FILE)"
      fi
      continue
    fi
    if broker_answers; then
      say "broker up (pid $pid) in $((SECONDS - started))s; log $LOG_FILE"
      cmd_brokers
      return 0
    fi
  done
  tail -n 30 "$LOG_FILE" >&2 || true
  die "broker did not answer within ${START_TIMEOUT}s (log: $LOG_FILE); it may still be starting"
}

# ----------------------------------------------------------------------------------------------- stop
cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then
    say "not running"
    rm -f "$PID_FILE"
    return 0
  fi
  say "stopping broker (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      say "broker did not stop within 60s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      break
    fi
    sleep 0.2
  done
  rm -f "$PID_FILE"
  say "stopped"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "running $pid $HOST:$PORT"
    return 0
  fi
  echo "stopped"
  return 3
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  brokers) cmd_brokers ;;
  *) echo "usage: $0 {fetch|start|stop|restart|status|brokers}" >&2; exit 2 ;;
esac
