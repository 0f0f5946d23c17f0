"""Logs in to MySQL over TLS with PyMySQL (verifying the server against SSL_CERT_FILE), then leaves; writes what it saw to login-py-out.txt."""
import os
import sys

import pymysql

port, user, password, database = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
# autocommit=None: no SET AUTOCOMMIT after the login (a recorded login alone has no answer to it).
conn = pymysql.connect(host="127.0.0.1", port=int(port), user=user, password=password, database=database, autocommit=None, ssl={"ca": os.environ["SSL_CERT_FILE"]})
line = f"server={conn.server_version} tls={conn._sock.version()}\n"
conn.close()
with open("login-py-out.txt", "w") as f:
    f.write(line)
