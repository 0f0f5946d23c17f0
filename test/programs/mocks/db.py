"""Talks to PostgreSQL with psycopg2 (libpq) and writes what it got to db-out.txt."""
import sys

import psycopg2

port, password, fruit = sys.argv[1], sys.argv[2], sys.argv[3]
conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", password=password, dbname="postgres", sslmode="disable")
cur = conn.cursor()
cur.execute("CREATE TABLE IF NOT EXISTS fruit (name text PRIMARY KEY, qty int NOT NULL)")
cur.execute("INSERT INTO fruit VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET qty = fruit.qty + 1 RETURNING qty", (fruit, 1))
qty = cur.fetchone()[0]
cur.execute("SELECT name, qty FROM fruit WHERE name = %s", (fruit,))
rows = cur.fetchall()
conn.commit()
conn.close()
with open("db-out.txt", "w") as f:
    f.write(f"qty={qty} rows={rows}\n")
