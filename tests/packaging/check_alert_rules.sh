#!/bin/sh
# The shipped Prometheus alert rules: promtool checks them and runs their unit tests (every alert fires on what
# should fire it and stays quiet on a near miss), and the Grafana dashboard is valid JSON. Skips (77) without
# promtool unless SWITCHYARD_REQUIRE_TOOLS=1.
set -e
cd "$(dirname "$0")/../../packaging/monitoring"
if ! command -v promtool > /dev/null; then
  echo "promtool not found (Debian's prometheus package; ./setup.sh installs it)"
  [ "${SWITCHYARD_REQUIRE_TOOLS:-}" = 1 ] && exit 1
  exit 77
fi
promtool check rules switchyard-alerts.yml
promtool test rules switchyard-alerts-test.yml
python3 -m json.tool switchyard-dashboard.json > /dev/null && echo "switchyard-dashboard.json: valid JSON"
