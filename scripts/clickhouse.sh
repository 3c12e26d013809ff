#!/usr/bin/env bash
# A private ClickHouse server (Debian's clickhouse-server, 18.16) for the server adapter's
# contract tests: own config and data under a directory, loopback only, non-default ports so it
# never collides with a system server.
#
#   scripts/clickhouse.sh install          apt-get install clickhouse-server when missing
#   scripts/clickhouse.sh start [dir]      start (default dir .cache/clickhouse), wait for SELECT 1
#   scripts/clickhouse.sh stop [dir]       stop the server started from dir (pid file)
#   scripts/clickhouse.sh url              print the HTTP URL (export CLICKHOUSE_URL=$(… url))
#
# Ports: CLICKHOUSE_HTTP_PORT (default 18123), CLICKHOUSE_TCP_PORT (default 19000).
set -euo pipefail

http_port=${CLICKHOUSE_HTTP_PORT:-18123}
tcp_port=${CLICKHOUSE_TCP_PORT:-19000}
root=$(cd "$(dirname "$0")/.." && pwd)

find_server() {
  command -v clickhouse-server 2>/dev/null || { [ -x /usr/sbin/clickhouse-server ] && echo /usr/sbin/clickhouse-server; } || true
}

url() { echo "http://127.0.0.1:${http_port}"; }

answers() {
  # SELECT 1 over HTTP; curl when present, else bash's /dev/tcp.
  if command -v curl >/dev/null 2>&1; then
    [ "$(curl -fsS --max-time 2 "$(url)/?query=SELECT%201" 2>/dev/null)" = "1" ]
  else
    { exec 3<>"/dev/tcp/127.0.0.1/${http_port}"; } 2>/dev/null || return 1
    printf 'GET /?query=SELECT%%201 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    local body; body=$(timeout 2 cat <&3 | tail -n 1); exec 3<&- 3>&-
    [ "$body" = "1" ]
  fi
}

install() {
  if [ -n "$(find_server)" ]; then echo "clickhouse-server already installed: $(find_server)"; return 0; fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update
  # The package's postinst tries to start the system service; policy-rc.d may deny it, which is fine.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y clickhouse-server
}

write_config() {
  local dir=$1
  mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"
  cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>$dir/log/server.log</log>
    <errorlog>$dir/log/server.err.log</errorlog>
    <size>10M</size>
    <count>2</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${http_port}</http_port>
  <tcp_port>${tcp_port}</tcp_port>
  <max_connections>256</max_connections>
  <keep_alive_timeout>3</keep_alive_timeout>
  <max_concurrent_queries>64</max_concurrent_queries>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <mark_cache_size>268435456</mark_cache_size>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
</yandex>
XML
  cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
XML
}

start() {
  local dir; dir=$(mkdir -p "${1:-$root/.cache/clickhouse}" && cd "${1:-$root/.cache/clickhouse}" && pwd)
  local server; server=$(find_server)
  [ -n "$server" ] || { echo "clickhouse-server not installed (run: $0 install)" >&2; exit 1; }
  if [ -f "$dir/server.pid" ] && kill -0 "$(cat "$dir/server.pid")" 2>/dev/null && answers; then
    echo "already running (pid $(cat "$dir/server.pid")) at $(url)"; return 0
  fi
  if answers; then echo "port ${http_port} already answers but not from $dir; refusing to start" >&2; exit 1; fi
  write_config "$dir"
  (cd "$dir" && exec setsid "$server" --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 </dev/null) &
  echo $! >"$dir/server.pid"
  for _ in $(seq 1 120); do
    if answers; then echo "clickhouse-server $(curl -fsS "$(url)/?query=SELECT%20version()" 2>/dev/null || true) at $(url) (pid $(cat "$dir/server.pid"))"; return 0; fi
    if ! kill -0 "$(cat "$dir/server.pid")" 2>/dev/null; then
      echo "clickhouse-server exited during start; last log lines:" >&2
      tail -n 20 "$dir/log/stdout.log" "$dir/log/server.err.log" 2>/dev/null >&2 || true
      rm -f "$dir/server.pid"; exit 1
    fi
    sleep 0.5
  done
  echo "clickhouse-server did not answer SELECT 1 within 60 s" >&2; exit 1
}

stop() {
  local dir=${1:-$root/.cache/clickhouse}
  [ -f "$dir/server.pid" ] || { echo "not running (no $dir/server.pid)"; return 0; }
  local pid; pid=$(cat "$dir/server.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$dir/server.pid"
  echo "stopped (pid $pid)"
}

case "${1:-}" in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  url) url ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
