"""Talks to MySQL/MariaDB with PyMySQL (text protocol, a multi-statement query) and writes what it got to shop-out.txt."""
import os
import sys

import pymysql
from pymysql.constants import CLIENT

port, password, item = sys.argv[1], sys.argv[2], sys.argv[3]
# A 4th argument `tls`: TLS, verifying the server (debugkit's leaf: its CA is in SSL_CERT_FILE's bundle).
tls = {"ssl": {"ca": os.environ["SSL_CERT_FILE"]}} if sys.argv[4:] == ["tls"] else {}
conn = pymysql.connect(host="127.0.0.1", port=int(port), user="app", password=password, database="shop", client_flag=CLIENT.MULTI_STATEMENTS, **tls)
version = conn._sock.version() if hasattr(conn._sock, "version") else "none"
cur = conn.cursor()
cur.execute("CREATE TABLE IF NOT EXISTS stock (name VARCHAR(40) PRIMARY KEY, qty INT NOT NULL)")
cur.execute("INSERT INTO stock VALUES (%s, %s) ON DUPLICATE KEY UPDATE qty = qty + 1", (item, 1))
conn.commit()
cur.execute("SELECT name, qty FROM stock WHERE name = %s; SELECT COUNT(*) FROM stock", (item,))
first = cur.fetchall()
cur.nextset()
second = cur.fetchall()
conn.close()
with open("shop-out.txt", "w") as f:
    f.write(f"rows={first} count={second}" + (f" tls={version}" if tls else "") + "\n")
