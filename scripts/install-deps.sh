#!/usr/bin/env bash
# Installs the Debian packages debugkit's engines and tests need. As root it installs what is
# missing; otherwise it names the exact command to run and fails.
set -euo pipefail

# package:command-or-test pairs; a test starting with / is a file that must exist.
REQUIRED=(
  "gdb:gdb"
  "gcc:gcc"
  "procps:ps"
  "python3-debugpy:/usr/lib/python3/dist-packages/debugpy/__init__.py"
  "kubernetes-client:kubectl"
  "proxychains4:proxychains4"
  "curl:curl"
  "postgresql-client:psql"
  "postgresql-15:/usr/lib/postgresql/15/bin/initdb"
  "python3-psycopg2:/usr/lib/python3/dist-packages/psycopg2/__init__.py"
  "redis-server:redis-server"
  "mariadb-server:/usr/sbin/mariadbd"
  "python3-pymysql:/usr/lib/python3/dist-packages/pymysql/__init__.py"
  "ripgrep:rg"
  "python3-redis:/usr/lib/python3/dist-packages/redis/__init__.py"
  "openssl:openssl"
  "g++:g++"
  "make:make"
  "golang-go:go"
  "delve:dlv"
)
# What only the tests need (--tests, as scripts/test.sh runs it): the browser the live view's page is tested in.
if [[ ${1:-} == --tests ]]; then
  REQUIRED+=("chromium:chromium")
fi

missing=()
for pair in "${REQUIRED[@]}"; do
  pkg=${pair%%:*}
  probe=${pair#*:}
  if [[ $probe == /* ]]; then
    [[ -e $probe ]] || missing+=("$pkg")
  else
    command -v "$probe" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "debugkit needs these Debian packages: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
